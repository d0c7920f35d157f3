import { jest } from '@jest/globals';
import Koa from 'koa';
import { OpenAPIBackend, type Context as ApiContext } from 'openapi-backend';
import request from 'supertest';
import { loadConfig } from '../src/config/index.js';
import type { OperationId, Operations } from '../src/handlers/types.js';
import { buildApi } from '../src/http/api.js';
import { securityFailure } from '../src/http/authentication.js';
import { bearerToken } from '../src/http/bearer.js';
import { validationContractFor } from '../src/http/contract.js';
import { bodies } from '../src/http/middleware.js';
import { routeOnce } from '../src/http/openapi-backend-overrides.js';
import { rejectNulCharacters, validatingBackend, validationFailure } from '../src/http/validation.js';
import type { Principal } from '../src/principal.js';

/*
 * src/http/openapi-backend-overrides.ts replaces openapi-backend's routing (routeOnce) and skips it
 * for operations with nothing to validate (direct). Both lean on the internals of the pinned
 * version; these tests fail when an upgrade changes what they rely on: the internals still exist
 * and are called, and requests come out exactly as openapi-backend's own path has them.
 */

const config = loadConfig({});
const document = validationContractFor(config.server, config.pagination);
const principal = { user: { id: 7 }, sessionId: 'session' } as unknown as Principal;
/** A token check as the service's: one good token, an expired one refused with its own error. */
class TokenRefused extends Error {}
const authenticate = async (token: string): Promise<Principal> => {
  if (token === 'good') return principal;
  throw new TokenRefused(token === 'expired' ? 'expired' : 'invalid');
};

type Outcome = Record<string, unknown>;
const json = (value: unknown): Outcome => JSON.parse(JSON.stringify(value ?? null));
const refusal = (error: unknown): Outcome => {
  const { name, message, details } = error as { name: string; message: string; details?: unknown };
  return json({ refused: { type: error?.constructor?.name ?? name, message, details } });
};

/** The service's own path: the Koa routes buildApi makes, with operations that echo what they are handed. */
async function serviceApp(): Promise<Koa> {
  const echo: Operations = {
    has: (operationId): operationId is OperationId => operationIds.has(operationId),
    run: async (operationId, input) => ({
      status: 200,
      body: { operationId, body: input.body ?? null, query: input.query, path: input.path, caller: input.principal ? 7 : null },
    }),
  };
  // Proof of presence is the service's rule, not openapi-backend's: every caller here has it.
  const { router } = await buildApi(document, echo, { authenticate, requirePresence: async () => {}, parseBody: bodies(64 * 1024) });
  const koa = new Koa();
  koa.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      ctx.status = 500;
      ctx.body = refusal(error);
    }
    // The operation the Koa router matched, whether it answered or refused.
    if (ctx.state.operationId) ctx.set('Operation-Id', ctx.state.operationId);
  });
  koa.use(router.routes());
  return koa;
}

/** openapi-backend's own path, set up alike: its routing, parsing, security and validation. */
async function stockBackend(): Promise<OpenAPIBackend> {
  const api = validatingBackend(document);
  await api.init();
  for (const operation of api.getOperations()) {
    api.register(operation.operationId!, (c: ApiContext) => {
      rejectNulCharacters(c.request);
      const caller = Object.values(c.security ?? {}).some((result) => result === principal) ? 7 : null;
      // The path parameters as its validator coerced them: its own parseRequest then reads them from
      // the path again, as strings. The service hands on the coerced ones, as the handlers' types say.
      const path = c.validation?.coerced?.params ?? c.request.params;
      return { operationId: c.operation.operationId, body: c.request.requestBody ?? null, query: c.request.query, path, caller };
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
  for (const scheme of Object.keys((document.components as any).securitySchemes)) {
    api.registerSecurityHandler(scheme, (c: ApiContext) => {
      const token = bearerToken(String(c.request.headers.authorization ?? ''));
      if (token === undefined) throw securityFailure({ authorized: false });
      return authenticate(token);
    });
  }
  return api;
}

const operationIds = new Set<string>();
for (const item of Object.values(document.paths)) {
  for (const operation of Object.values(item)) if (typeof operation?.operationId === 'string') operationIds.add(operation.operationId);
}

interface Case {
  name: string;
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  query?: Record<string, string>;
  token?: string;
  body?: Record<string, unknown>;
  form?: boolean;
}

const cases: Case[] = [
  { name: 'a page of users', method: 'get', path: '/api/users', query: { page: '2', per_page: '10', status: 'active' }, token: 'good' },
  { name: 'a cursor of users', method: 'get', path: '/api/users', query: { cursor: '12', limit: '5' }, token: 'good' },
  { name: 'a page number out of range', method: 'get', path: '/api/users', query: { page: '0', per_page: '1000' }, token: 'good' },
  { name: 'no token', method: 'get', path: '/api/users', query: { page: '1' } },
  { name: 'an expired token', method: 'get', path: '/api/users', token: 'expired' },
  { name: 'a user by id', method: 'get', path: '/api/users/12', token: 'good' },
  { name: 'a trailing slash', method: 'get', path: '/api/users/12/', token: 'good' },
  { name: 'an id that is no integer', method: 'get', path: '/api/users/abc', token: 'good' },
  { name: 'an update', method: 'put', path: '/api/users/5', token: 'good', body: { name: 'Ada', is_active: false } },
  {
    name: 'an update with an unknown field',
    method: 'put',
    path: '/api/users/5',
    token: 'good',
    body: { nickname: 'x', is_active: 'maybe' },
  },
  { name: 'a restore', method: 'post', path: '/api/users/5/restore', token: 'good' },
  { name: 'a session by id', method: 'delete', path: '/api/auth/sessions/6f1c1d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f', token: 'good' },
  { name: 'a session id that is no uuid', method: 'delete', path: '/api/auth/sessions/nope', token: 'good' },
  {
    name: 'a registration',
    method: 'post',
    path: '/api/auth/register',
    body: { email: ' ada@example.com ', password: 'correct-horse-battery', name: 'Ada' },
  },
  { name: 'a registration missing fields', method: 'post', path: '/api/auth/register', body: { email: 'not-an-address' } },
  { name: 'a NUL character', method: 'post', path: '/api/auth/login/json', body: { email: 'ada@example.com', password: 'a\u0000b' } },
  {
    name: 'a password grant as a form',
    method: 'post',
    path: '/api/auth/login',
    form: true,
    body: { username: 'ada@example.com', password: 'pw' },
  },
  {
    name: 'a grant of neither shape',
    method: 'post',
    path: '/api/auth/login',
    form: true,
    body: { grant_type: 'refresh_token', username: 'ada@example.com' },
  },
  { name: 'a logout of every session', method: 'post', path: '/api/auth/logout', token: 'good', body: { all: true } },
  {
    name: 'audit events',
    method: 'get',
    path: '/api/audit-events',
    query: { cursor: '3', limit: '2', since: '2024-01-01T00:00:00Z' },
    token: 'good',
  },
  // Served by the direct path:
  { name: 'the caller', method: 'get', path: '/api/auth/me', token: 'good' },
  { name: 'the caller without a token', method: 'get', path: '/api/auth/me' },
  { name: 'the caller with an expired token', method: 'get', path: '/api/auth/me', token: 'expired' },
  { name: 'the caller with another scheme', method: 'get', path: '/api/auth/me', token: 'Basic abc' },
  { name: 'the sessions', method: 'get', path: '/api/auth/sessions', token: 'good' },
  { name: 'a health probe', method: 'get', path: '/health/live' },
  { name: 'the keys', method: 'get', path: '/.well-known/jwks.json' },
];

let service: Koa;
let stock: OpenAPIBackend;
beforeAll(async () => {
  service = await serviceApp();
  stock = await stockBackend();
});

async function throughService(c: Case): Promise<Outcome> {
  const agent = request(service.callback());
  let call = agent[c.method](c.path).query(c.query ?? {});
  if (c.token) call = call.set('Authorization', c.token.includes(' ') ? c.token : `Bearer ${c.token}`);
  if (c.body) call = call.type(c.form ? 'form' : 'json').send(c.body);
  return json((await call).body);
}

async function throughOpenApiBackend(c: Case): Promise<Outcome> {
  const headers: Record<string, string> = {};
  if (c.token) headers.authorization = c.token.includes(' ') ? c.token : `Bearer ${c.token}`;
  if (c.body) headers['content-type'] = c.form ? 'application/x-www-form-urlencoded' : 'application/json';
  try {
    return json(await stock.handleRequest({ method: c.method, path: c.path, query: c.query ?? {}, headers, body: c.body }));
  } catch (error) {
    return refusal(error);
  }
}

describe('the service routes, parses and validates as openapi-backend 5.21 does', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const [ours, theirs] = await Promise.all([throughService(c), throughOpenApiBackend(c)]);
    expect(ours).toEqual(theirs);
  });

  it('matches every path of the contract to the operation openapi-backend matches', async () => {
    // The contract has `/health/` and `/health` answer alike; trailing slashes being optional, each
    // router takes one of the two operations for both paths.
    const alike = (operationId: string | undefined) => (operationId === 'healthCheckAlias' ? 'healthCheck' : operationId);
    for (const operation of stock.getOperations()) {
      const path = operation.path.replace(/\{[^}]+\}/g, '1');
      const ours = await request(service.callback())[operation.method as Case['method']](path).set('Authorization', 'Bearer good');
      expect({ path, operationId: alike(ours.headers['operation-id']) }).toEqual({
        path,
        operationId: alike(stock.router.matchOperation({ method: operation.method, path, headers: {} })?.operationId),
      });
    }
  });

  it('ignores query parameters the operation does not declare, where openapi-backend refuses them', async () => {
    const c: Case = { name: 'a cache buster', method: 'get', path: '/api/users', query: { page: '1', _: '1700000000' }, token: 'good' };
    expect(await throughService(c)).toEqual({ operationId: 'listUsers', body: null, query: { page: 1 }, path: {}, caller: 7 });
    expect(await throughOpenApiBackend(c)).toMatchObject({ refused: { details: [{ field: 'query._', message: 'is not allowed' }] } });
  });
});

describe('the direct path', () => {
  it('serves the operations with no parameters and no body without openapi-backend', async () => {
    const handleRequest = jest.spyOn(OpenAPIBackend.prototype, 'handleRequest');
    try {
      for (const path of ['/api/auth/me', '/api/auth/sessions', '/health/', '/health/ready', '/.well-known/jwks.json']) {
        const res = await request(service.callback()).get(path).set('Authorization', 'Bearer good');
        expect(res.status).toBe(200);
      }
      expect(handleRequest).not.toHaveBeenCalled();
      await request(service.callback()).get('/api/users/1').set('Authorization', 'Bearer good');
      expect(handleRequest).toHaveBeenCalledTimes(1);
    } finally {
      handleRequest.mockRestore();
    }
  });
});

describe('the openapi-backend internals routeOnce replaces', () => {
  it('are still the ones its request path and validator call', async () => {
    const api = validatingBackend(document);
    await api.init();
    const router = api.router;
    const replaced = ['getOperations', 'getOperation', 'matchOperation', 'parseRequest'] as const;
    for (const name of replaced) expect(typeof router[name]).toBe('function');
    routeOnce(api, router.getOperations());
    // The validator reads operations and parses requests through the same router object.
    expect((api.validator as unknown as { router: unknown }).router).toBe(router);
    const called: string[] = [];
    for (const name of replaced) {
      const override = (router[name] as (...args: unknown[]) => unknown).bind(router);
      (router as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        called.push(name);
        return override(...args);
      };
    }
    api.register('getUser', (c: ApiContext) => c.request.params);
    api.registerSecurityHandler('OAuth2PasswordBearer', () => principal);
    api.registerSecurityHandler('HTTPBearer', () => principal);
    const routed = { operationId: 'getUser', method: 'GET', path: '/api/users/3', headers: {}, query: {}, params: { id: '3' } };
    // Coerced by the validator, from the parameters the Koa router parsed.
    await expect(api.handleRequest(routed)).resolves.toEqual({ id: 3 });
    expect(called).toContain('matchOperation');
    expect(called).toContain('parseRequest');
    expect(typeof api.validator.getRequestValidatorsForOperation).toBe('function');
    expect(api.validator.getRequestValidatorsForOperation('getUser')?.length).toBeGreaterThan(0);
  });
});
