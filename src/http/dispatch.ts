import type { Context as KoaContext } from 'koa';
import type { Operation } from 'openapi-backend';
import type { OperationId, WireReply } from '../handlers/types.js';
import { badRequest } from './errors.js';
import type { RoutedRequest } from './openapi-backend-overrides.js';
import { stateOf } from './state.js';

export interface DispatchOptions {
  /** Runs once the operation is known (`ctx.state.operationId`) and before anything else; may throw. */
  guard?: (ctx: KoaContext) => Promise<void>;
  /** Runs once the body has been read, before it is validated; may throw. */
  bodyGuard?: (ctx: KoaContext) => Promise<void>;
  /** Reads the body, for the operations whose contract has one; other operations never read it. */
  parseBody?: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;
}

/** Validates and answers a request the Koa router matched to the operation. */
export type Handle = (ctx: KoaContext, request: RoutedRequest) => Promise<WireReply>;

/**
 * The Koa middleware of one operation: guards, reads the body its contract declares (refusing other
 * content types), hands the request on and writes the reply.
 */
export function dispatcher(operation: Operation, handle: Handle, { guard, bodyGuard, parseBody }: DispatchOptions) {
  const requestBody = operation.requestBody && 'content' in operation.requestBody ? operation.requestBody : undefined;
  const mediaTypes = Object.keys(requestBody?.content ?? {});
  return async (ctx: KoaContext) => {
    stateOf(ctx).operationId = operation.operationId as OperationId;
    if (guard) await guard(ctx);
    const withBody = hasBody(ctx);
    if (mediaTypes.length > 0) {
      if (withBody && !ctx.request.is(mediaTypes)) throw badRequest(`Unsupported content type; send ${mediaTypes.join(' or ')}`);
      await parseBody?.(ctx, async () => {});
      if (bodyGuard) await bodyGuard(ctx);
    }
    const request: RoutedRequest = {
      operationId: operation.operationId!,
      method: ctx.method,
      path: ctx.path,
      headers: ctx.headers as RoutedRequest['headers'],
      query: ctx.query as RoutedRequest['query'],
      params: ctx.params as Record<string, string>,
      // A required body that was not sent validates as an empty one, so each missing field is named.
      body: withBody ? ctx.request.body : requestBody?.required ? {} : undefined,
    };
    const reply = await handle(ctx, request);
    ctx.status = reply.status;
    if (reply.headers) ctx.set(reply.headers);
    // A redirect's body is empty: with none at all, Koa would turn the status into a 204.
    ctx.body = reply.body ?? (reply.status >= 300 && reply.status < 400 ? '' : null);
  };
}

function hasBody(ctx: KoaContext): boolean {
  return (ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '';
}
