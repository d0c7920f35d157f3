import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import bodyParser from 'koa-bodyparser';
import type { Logger } from '../logger.js';
import { ApiError, badRequest, toApiError } from './errors.js';
import { stateOf } from './state.js';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Takes a sane X-Request-Id from the client or makes one, and echoes it back. */
export async function requestId(ctx: Context, next: Next): Promise<void> {
  const sent = ctx.get('x-request-id');
  const id = REQUEST_ID.test(sent) ? sent : randomUUID();
  stateOf(ctx).requestId = id;
  ctx.set('X-Request-Id', id);
  await next();
}

/**
 * One line per request: id, operation, status and duration; never headers or bodies. Requests to
 * `quietPaths` (a metrics scrape every few seconds) are logged at debug unless they fail.
 */
export function accessLog(logger: Logger, { quietPaths = [] }: { quietPaths?: readonly string[] } = {}) {
  // Its fields are fixed and hold no secret, so the access line skips the redaction pass every other
  // line goes through (a measurable share of a cheap request).
  const access = logger.child({}, { redact: [] });
  return async (ctx: Context, next: Next): Promise<void> => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const level = ctx.status < 400 && quietPaths.includes(ctx.path) ? 'debug' : 'info';
      access[level](
        {
          requestId: stateOf(ctx).requestId,
          method: ctx.method,
          path: ctx.path,
          operationId: stateOf(ctx).operationId,
          status: ctx.status,
          durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        },
        'request',
      );
    }
  };
}

/** The one place an error becomes a response: the envelope for clients, the cause for the log. */
export function errors(logger: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
    } catch (thrown) {
      const error = toApiError(thrown);
      if (error.logLevel) {
        logger[error.logLevel](
          { requestId: stateOf(ctx).requestId, method: ctx.method, path: ctx.path, status: error.status, code: error.code },
          error.message,
        );
      } else if (error.status >= 500) {
        logger.error({ err: error.cause ?? thrown, requestId: stateOf(ctx).requestId, method: ctx.method, path: ctx.path }, error.message);
      }
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.body = {
        success: false,
        error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}), ...error.fields },
      };
    }
  };
}

/**
 * JSON, form and multipart form bodies up to `limitBytes`; anything malformed is a 400 in the
 * envelope. Multipart is for the OAuth2 token URL: some generated clients send every form so. Only
 * operations whose contract names a media type get here with it.
 */
export function bodies(limitBytes: number) {
  const parser = bodyParser({
    enableTypes: ['json', 'form'],
    jsonLimit: `${limitBytes}b`,
    formLimit: `${limitBytes}b`,
    strict: true,
    onerror: (error) => {
      throw (error as { status?: number }).status === 413 ? error : badRequest();
    },
  });
  return async (ctx: Context, next: Next) => {
    if (!ctx.request.is('multipart/form-data')) {
      await parser(ctx, next);
      return;
    }
    ctx.request.body = await multipartFields(ctx, limitBytes);
    await next();
  };
}

/** The text fields of a multipart body, parsed by the runtime's own Fetch implementation; a file is a 400. */
async function multipartFields(ctx: Context, limitBytes: number): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw new ApiError(413, 'PAYLOAD_TOO_LARGE', 'Request body too large');
    chunks.push(chunk);
  }
  let form: FormData;
  try {
    form = await new Response(Buffer.concat(chunks), { headers: { 'content-type': ctx.get('content-type') } }).formData();
  } catch {
    throw badRequest();
  }
  const fields: Record<string, string> = {};
  for (const [name, value] of form) {
    if (typeof value !== 'string') throw badRequest('Files are not accepted');
    fields[name] = value;
  }
  return fields;
}
