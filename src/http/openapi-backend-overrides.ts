/*
 * The two places the service steps around openapi-backend's own request path, for speed. Both rely
 * on its internals as the pinned version has them; test/openapi-backend-overrides.test.ts checks
 * that they still exist and that requests come out as openapi-backend's own path would have them.
 */
import type { Context as KoaContext } from 'koa';
import type { OpenAPIBackend } from 'openapi-backend';
import type { Operation, ParsedRequest, Request } from 'openapi-backend';
import type { OperationRequest, WireReply } from '../handlers/types.js';
import type { Principal } from '../principal.js';
import { operationRequest } from './request.js';

/** A request as handed to openapi-backend, carrying what the Koa router already matched. */
export interface RoutedRequest extends Request {
  operationId: string;
}

/**
 * openapi-backend re-lists the operations and compiles a path regex on every request. The Koa
 * router has matched the operation already, so hand it over along with the parameters it parsed.
 */
export function routeOnce(api: OpenAPIBackend, operations: Operation[]): void {
  const byId = new Map(operations.map((operation) => [operation.operationId, operation]));
  const declaredQuery = new Map(
    operations.map((op) => [
      op.operationId,
      new Set((op.parameters ?? []).flatMap((p) => ('in' in p && p.in === 'query' ? [p.name] : []))),
    ]),
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
      requestBody: req.body as unknown,
      body: req.body as unknown,
    };
  }) as typeof router.parseRequest;
}

/**
 * For an operation with no parameters and no body there is nothing to validate, so it skips
 * openapi-backend: the token is checked (when the operation requires one) and the handler called
 * directly. The token check is the same one openapi-backend would run, with the same errors. Among
 * the operations this serves are the most frequent ones (`getMe`, the health probes).
 */
export function direct(
  operation: Operation,
  run: (request: OperationRequest) => Promise<WireReply>,
  authenticate: (ctx: KoaContext) => Promise<Principal>,
): ((ctx: KoaContext) => Promise<WireReply>) | undefined {
  if ((operation.parameters ?? []).length > 0 || operation.requestBody) return undefined;
  const requirements = operation.security ?? [];
  // An empty requirement ({}) makes the token optional; leave that case to openapi-backend.
  if (requirements.some((requirement) => Object.keys(requirement).length === 0)) return undefined;
  const secured = requirements.length > 0;
  return async (ctx) => {
    if (secured) await authenticate(ctx);
    return run(operationRequest(ctx, { body: undefined, query: {}, path: {} }));
  };
}
