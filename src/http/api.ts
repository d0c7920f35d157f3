import Router from '@koa/router';
import type { Context as KoaContext } from 'koa';
import type { Context as ApiContext, Operation } from 'openapi-backend';
import type { OperationId, OperationRequest, Operations } from '../handlers/types.js';
import { keyAccessFor } from './api-key-access.js';
import { principalOf, securityFailure, type Authenticate } from './authentication.js';
import type { OpenApiDocument } from './contract.js';
import { dispatcher, type DispatchOptions, type Handle } from './dispatch.js';
import { direct, routeOnce } from './openapi-backend-overrides.js';
import { presenceFor, type RequirePresence } from './reauthentication.js';
import { operationRequest } from './request.js';
import { rejectNulCharacters, validatingBackend, validationFailure } from './validation.js';

export interface ContractApi {
  /** Koa routes for every path of the contract, built once. */
  router: Router;
  /**
   * Compiles the request validators in the background, one operation per turn of the event loop, so
   * that the start does not wait for them and no request waits long behind them; an operation asked
   * for before its turn compiles its own on the spot. Returns a function that stops it.
   */
  compileValidators: (onError: (error: unknown, operationId: string) => void) => () => void;
}

export interface ApiOptions extends DispatchOptions {
  /** Checks the bearer token of the operations with a security requirement. */
  authenticate: Authenticate;
  /** Asks the operations marked `x-reauthentication` for proof of presence. */
  requirePresence: RequirePresence;
}

/**
 * Builds the API from the contract: @koa/router matches each path once at start-up, openapi-backend
 * validates the request (security, path, query, body) and dispatches to the operation by operationId.
 */
export async function buildApi(document: OpenApiDocument, operations: Operations, options: ApiOptions): Promise<ContractApi> {
  const { authenticate, requirePresence } = options;
  const api = validatingBackend(document);
  await api.init();
  const contractOperations = api.router.getOperations();
  assertEveryOperationHandled(contractOperations, operations);
  // Every operationId of the contract has its operation: checked just above.
  const run = (operation: Operation, request: OperationRequest) => operations.run(operation.operationId as OperationId, request);
  routeOnce(api, contractOperations);
  // The caller of a secured operation, once per request: a token's user, or an API key's, admitted
  // only where the contract lets keys in.
  const admitKey = keyAccessFor(contractOperations);
  // Once the request is valid, and before the operation changes anything.
  const presence = presenceFor(contractOperations, requirePresence);
  const authenticateRequest = async (ctx: KoaContext) => {
    const principal = await principalOf(ctx, authenticate);
    admitKey(ctx, principal);
    return principal;
  };

  for (const operation of contractOperations) {
    api.register(operation.operationId!, async (c: ApiContext, ctx: KoaContext) => {
      rejectNulCharacters(c.request);
      const {
        requestBody: body,
        query,
        params: path,
      } = c.request as { requestBody: unknown; query: Record<string, unknown>; params: Record<string, unknown> };
      const request = operationRequest(ctx, { body, query, path });
      await presence(operation.operationId!, request.principal, body);
      return run(operation, request);
    });
  }
  api.register({
    validationFail: (c: ApiContext) => {
      throw validationFailure(c.validation.errors ?? []);
    },
    unauthorizedHandler: (c: ApiContext) => {
      throw securityFailure(c.security);
    },
  });
  for (const scheme of Object.keys(document.components?.securitySchemes ?? {})) {
    api.registerSecurityHandler(scheme, (_c: ApiContext, ctx: KoaContext) => authenticateRequest(ctx));
  }

  const router = new Router();
  for (const operation of contractOperations) {
    const handle: Handle =
      direct(operation, (request) => run(operation, request), authenticateRequest) ?? ((ctx, request) => api.handleRequest(request, ctx));
    router.register(koaPath(operation.path), [operation.method.toUpperCase()], dispatcher(operation, handle, options));
  }
  const compileValidators = (onError: (error: unknown, operationId: string) => void) => {
    const pending = contractOperations.map((operation) => operation.operationId!);
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

function assertEveryOperationHandled(contractOperations: Operation[], operations: Operations): void {
  const missing = contractOperations.map((op) => op.operationId!).filter((id) => !operations.has(id));
  if (missing.length > 0) throw new Error(`No handler for operations: ${missing.join(', ')}`);
}

/** `/api/users/{id}` → `/api/users/:id`; a trailing slash is optional, as openapi-backend treats it. */
function koaPath(path: string): string {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  return trimmed.replace(/\{([^}]+)\}/g, ':$1');
}
