import Router from '@koa/router';
import addFormats from 'ajv-formats';
import type { ErrorObject } from 'ajv';
import type { Context as KoaContext } from 'koa';
import OpenAPIBackend, { type Context as ApiContext, type Document, type Operation, type ParsedRequest, type Request } from 'openapi-backend';
import type { HandlerInput, HandlerMap, OperationId, Reply, Services } from '../handlers/types';
import type { ClientInfo, Principal } from '../services/principal';
import { clientKey } from '../services/client-address';
import { asCaller } from '../services/passwords';
import { bearerToken } from './bearer';
import type { OpenApiDocument } from './contract';
import { badRequest, unauthorized, validationError, type FieldError } from './errors';

const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

/** A request as handed to openapi-backend, carrying what the Koa router already matched. */
interface RoutedRequest extends Request {
  operationId: string;
}

export interface ContractApi {
  /** Koa routes for every path of the contract, built once. */
  router: Router;
  /**
   * Compiles the request validators in the background, one operation per turn of the event loop, so
   * that the start does not wait for them and no request waits long behind them; an operation asked
   * for before its turn compiles its own on the spot. Returns a function that stops it.
   */
  compileValidators(onError: (error: unknown, operationId: string) => void): () => void;
}

export interface ApiOptions {
  /** Runs once the operation is known (`ctx.state.operationId`) and before anything else; may throw. */
  guard?: (ctx: KoaContext) => Promise<void>;
  /** Runs once the body has been read, before it is validated; may throw. */
  bodyGuard?: (ctx: KoaContext) => Promise<void>;
  /** Reads the body, for the operations whose contract has one; other operations never read it. */
  parseBody?: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;
}

/**
 * Builds the API from the contract: @koa/router matches each path once at start-up, openapi-backend
 * validates the request (security, path, query, body) and dispatches to the handler by operationId.
 */
export async function buildApi(document: OpenApiDocument, handlers: HandlerMap, services: Services, options: ApiOptions = {}): Promise<ContractApi> {
  const api = new OpenAPIBackend({
    definition: document as unknown as Document,
    strict: true,
    coerceTypes: true,
    // Validators are compiled when first needed rather than all at start-up. Responses are the service's
    // own and never validated at run time (the test suite checks each one against the contract), and
    // compiling their validators anyway held some 40 MB per process. Quick mode also skips checking the
    // document against the OpenAPI schema, which `make lint-contract` does, and dereferences it in one
    // synchronous pass (it has only local references).
    quick: true,
    // openapi-backend makes an Ajv instance per operation and validation context, and each would compile
    // the JSON Schema meta-schema to check the contract's schemas before compiling them: most of the
    // start-up time. The lint checks those schemas once, before they ship.
    // verbose: an error carries its schema, so a pattern can say in words what it wants (`x-pattern-message`).
    ajvOpts: { allErrors: true, strict: false, validateSchema: false, verbose: true },
    customizeAjv: (ajv) => {
      addFormats(ajv, ['date-time', 'uuid']);
      // The service trims e-mails before storing them, so surrounding white space is no error.
      ajv.addFormat('email', { type: 'string', validate: (value: string) => EMAIL.test(value.trim()) });
      return ajv;
    },
  });

  for (const operationId of Object.keys(handlers) as OperationId[]) {
    const handler = handlers[operationId] as (input: HandlerInput<OperationId>, services: Services) => Promise<Reply>;
    api.register(operationId, (c: ApiContext, ctx: KoaContext) => {
      rejectNulCharacters(c.request);
      return handler(
        {
          body: c.request.requestBody,
          query: c.request.query,
          path: c.request.params,
          principal: ctx.state.principal,
          client: clientOf(ctx),
        } as HandlerInput<OperationId>,
        services,
      );
    });
  }
  api.register({
    validationFail: (c: ApiContext) => {
      throw validationError(closestBranch(c.validation.errors ?? []).map(fieldError));
    },
    unauthorizedHandler: (c: ApiContext) => {
      // The security handler's own error: a 401 that says why, or a failure (the database, say) to pass on.
      const failure = Object.values(c.security).find((r) => r && typeof r === 'object' && r.error);
      throw failure?.error ?? unauthorized();
    },
  });
  const authenticate = (_c: ApiContext, ctx: KoaContext) => principalOf(ctx, services);
  for (const scheme of Object.keys((document.components as any)?.securitySchemes ?? {})) {
    api.registerSecurityHandler(scheme, authenticate);
  }

  await api.init();
  const operations = api.router.getOperations();
  assertEveryOperationHandled(operations, handlers);
  routeOnce(api, operations);

  const router = new Router();
  for (const operation of operations) {
    const handler = handlers[operation.operationId as OperationId] as (input: HandlerInput<OperationId>, services: Services) => Promise<Reply>;
    const handle = direct(operation, handler, services) ?? ((ctx: KoaContext, request: RoutedRequest) => api.handleRequest(request, ctx));
    router.register(koaPath(operation.path), [operation.method.toUpperCase()], dispatcher(operation, handle, options));
  }
  const compileValidators = (onError: (error: unknown, operationId: string) => void) => {
    const pending = operations.map((operation) => operation.operationId!);
    let timer: NodeJS.Immediate | undefined;
    const next = () => {
      const operationId = pending.shift();
      if (operationId === undefined) return;
      try {
        api.validator.getRequestValidatorsForOperation(operationId);
      } catch (error) {
        onError(error, operationId);
      }
      timer = setImmediate(next);
    };
    timer = setImmediate(next);
    return () => clearImmediate(timer);
  };
  return { router, compileValidators };
}

/**
 * openapi-backend re-lists the operations and compiles a path regex on every request. The Koa
 * router has matched the operation already, so hand it over along with the parameters it parsed.
 */
function routeOnce(api: OpenAPIBackend, operations: Operation[]): void {
  const byId = new Map(operations.map((operation) => [operation.operationId, operation]));
  const declaredQuery = new Map(
    operations.map((op) => [op.operationId, new Set((op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name))]),
  );
  const router = api.router;
  router.getOperations = () => operations;
  router.getOperation = (operationId: string) => byId.get(operationId);
  router.matchOperation = ((req: RoutedRequest) => byId.get(req.operationId)) as typeof router.matchOperation;
  router.parseRequest = ((req: RoutedRequest, operation?: Operation): ParsedRequest => {
    // Undeclared query parameters (cache busters and the like) are ignored rather than refused.
    const known = declaredQuery.get(req.operationId);
    const query: Record<string, unknown> = {};
    for (const [name, value] of Object.entries((req.query as Record<string, unknown>) ?? {})) {
      if (known?.has(name)) query[name] = value;
    }
    return {
      method: req.method.toLowerCase(),
      path: req.path,
      headers: req.headers,
      query,
      params: operation ? (req.params ?? {}) : {},
      cookies: {},
      requestBody: req.body,
      body: req.body,
    };
  }) as typeof router.parseRequest;
}

/**
 * For an operation with no parameters and no body there is nothing to validate, so it skips
 * openapi-backend: the token is checked (when the operation requires one) and the handler called
 * directly. The token check is the same one openapi-backend would run, with the same errors. Among
 * the operations this serves are the most frequent ones (`getMe`, the health probes).
 */
function direct(
  operation: Operation,
  handler: (input: HandlerInput<OperationId>, services: Services) => Promise<Reply>,
  services: Services,
): ((ctx: KoaContext) => Promise<Reply>) | undefined {
  if ((operation.parameters ?? []).length > 0 || operation.requestBody) return undefined;
  const requirements = operation.security ?? [];
  // An empty requirement ({}) makes the token optional; leave that case to openapi-backend.
  if (requirements.some((requirement) => Object.keys(requirement).length === 0)) return undefined;
  const secured = requirements.length > 0;
  return async (ctx) => {
    if (secured) await principalOf(ctx, services);
    return handler({ body: undefined, query: {}, path: {}, principal: ctx.state.principal, client: clientOf(ctx) } as HandlerInput<OperationId>, services);
  };
}

function dispatcher(operation: Operation, handle: (ctx: KoaContext, request: RoutedRequest) => Promise<Reply>, { guard, bodyGuard, parseBody }: ApiOptions) {
  const requestBody = operation.requestBody && 'content' in operation.requestBody ? operation.requestBody : undefined;
  const mediaTypes = Object.keys(requestBody?.content ?? {});
  return async (ctx: KoaContext) => {
    ctx.state.operationId = operation.operationId;
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
      params: ctx.params,
      // A required body that was not sent validates as an empty one, so each missing field is named.
      body: withBody ? ctx.request.body : requestBody?.required ? {} : undefined,
    };
    // Password hashes count against the signed-in user, else the client, for their share of the queue.
    const reply: Reply = await asCaller(() => hashCallerOf(ctx), () => handle(ctx, request));
    ctx.status = reply.status;
    if (reply.headers) ctx.set(reply.headers);
    ctx.body = reply.body ?? null;
  };
}

function hasBody(ctx: KoaContext): boolean {
  return (ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '';
}

function hashCallerOf(ctx: KoaContext): string {
  const principal = ctx.state.principal as Principal | undefined;
  return principal ? `user:${principal.user.id}` : `client:${clientKey(ctx.ip)}`;
}

/** User agents are kept up to this length on sessions and audit events. */
const MAX_USER_AGENT_LENGTH = 512;

/** Where the request comes from, for the sessions it opens and the audit events it causes. */
function clientOf(ctx: KoaContext): ClientInfo {
  return { ip: ctx.ip || null, userAgent: ctx.get('user-agent').slice(0, MAX_USER_AGENT_LENGTH) || null, requestId: ctx.state.requestId ?? null };
}

async function principalOf(ctx: KoaContext, services: Services): Promise<Principal> {
  // Both security schemes of an operation land here: authenticate once per request.
  ctx.state.authentication ??= (async () => {
    const token = bearerToken(ctx.get('authorization'));
    if (token === undefined) throw unauthorized();
    const principal = await services.auth.authenticate(token, clientOf(ctx));
    ctx.state.principal = principal;
    return principal;
  })();
  return ctx.state.authentication;
}

/**
 * PostgreSQL text cannot hold U+0000, so a valid-looking string with one would fail in the database
 * (a 500). It is refused like any other invalid value: a 422 naming each field.
 */
function rejectNulCharacters(request: ParsedRequest): void {
  const fields: FieldError[] = [];
  const visit = (value: unknown, field: string): void => {
    if (typeof value === 'string') {
      if (value.includes('\u0000')) fields.push({ field, message: 'must not contain NUL characters' });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) visit(item, `${field}.${key}`);
    }
  };
  visit(request.requestBody, 'body');
  visit(request.query, 'query');
  visit(request.params, 'path');
  if (fields.length > 0) throw validationError(fields);
}

/** An ajv error as the envelope's `details` entry: `body.email`, `query.page`, `path.id`. */
/**
 * A body that matches none of a `oneOf`'s schemas (the token URL's two grants) fails each of them:
 * keep only the errors of the one it came closest to, so that the details name what to fix rather
 * than every field of every other shape.
 */
function closestBranch(errors: ErrorObject[]): ErrorObject[] {
  const branchOf = (error: ErrorObject) => /\/oneOf\/(\d+)\//.exec(error.schemaPath)?.[1];
  const counts = new Map<string, number>();
  for (const error of errors) {
    const branch = branchOf(error);
    if (branch !== undefined) counts.set(branch, (counts.get(branch) ?? 0) + 1);
  }
  if (counts.size === 0) return errors;
  const [closest] = [...counts].sort(([a, x], [b, y]) => x - y || Number(a) - Number(b))[0];
  return errors.filter((error) => error.keyword !== 'oneOf' && (branchOf(error) ?? closest) === closest);
}

function fieldError(error: ErrorObject): FieldError {
  const segments = error.instancePath.split('/').slice(1);
  if (segments[0] === 'requestBody') segments[0] = 'body';
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') {
    const missing = String(params.missingProperty);
    return { field: missing === 'requestBody' ? 'body' : [...segments, missing].join('.'), message: 'is required' };
  }
  if (error.keyword === 'additionalProperties') {
    return { field: [...segments, String(params.additionalProperty)].join('.'), message: 'is not allowed' };
  }
  const patternMessage = error.keyword === 'pattern' ? (error.parentSchema as { 'x-pattern-message'?: unknown } | undefined)?.['x-pattern-message'] : undefined;
  return { field: segments.join('.') || 'body', message: typeof patternMessage === 'string' ? patternMessage : (error.message ?? 'is invalid') };
}

function assertEveryOperationHandled(operations: Operation[], handlers: HandlerMap): void {
  const missing = operations.map((op) => op.operationId!).filter((id) => !(id in handlers));
  if (missing.length > 0) throw new Error(`No handler for operations: ${missing.join(', ')}`);
}

/** `/api/users/{id}` → `/api/users/:id`; a trailing slash is optional, as openapi-backend treats it. */
function koaPath(path: string): string {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  return trimmed.replace(/\{([^}]+)\}/g, ':$1');
}
