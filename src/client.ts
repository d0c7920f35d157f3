import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from '../generated/openapi.js';

export type { components, operations, paths };

/** A client for every operation of the contract: paths, parameters, bodies and answers are typed. */
export type AccountClient = Client<paths>;

/** The access token or API key (`ask_...`) to send, or a function that returns the current one (undefined sends none). */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

export interface AccountClientOptions {
  /** Where the service answers, such as `https://accounts.example.com`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>` on every request that does not set its own. */
  token?: TokenSource;
  /** Used instead of the global fetch: for tests, proxies or instrumentation. */
  fetch?: (request: Request) => Promise<Response>;
}

/**
 * Middleware that adds `Authorization: Bearer <token>`. A request that carries an Authorization
 * header of its own keeps it, so one client can act for another token now and then.
 */
export function bearerAuth(token: TokenSource): Middleware {
  return {
    async onRequest({ request }) {
      if (request.headers.has('Authorization')) return undefined;
      const value = typeof token === 'function' ? await token() : token;
      if (value) request.headers.set('Authorization', `Bearer ${value}`);
      return request;
    },
  };
}

/**
 * A typed client of the account service, built on openapi-fetch. Each call resolves to
 * `{ data, error, response }`: `data` is the success body, `error` the error envelope.
 *
 * @example
 * const client = createAccountClient({ baseUrl: 'http://localhost:8000', token: () => session.accessToken });
 * const { data, error } = await client.GET('/api/users', { params: { query: { per_page: 50, status: 'active' } } });
 */
export function createAccountClient({ baseUrl, token, fetch }: AccountClientOptions): AccountClient {
  const client = createClient<paths>({ baseUrl, ...(fetch ? { fetch } : {}) });
  if (token !== undefined) client.use(bearerAuth(token));
  return client;
}
