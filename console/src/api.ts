import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from '../../generated/openapi';
import { accessToken, refresh, signIn } from './auth';

/**
 * The service's API, through the client generated from its contract (openapi-fetch over the types
 * openapi-typescript makes of api/openapi.yaml): every path, parameter and field the console uses
 * is the contract's, and a change to the contract that breaks the console fails its type check.
 */

export type Schemas = components['schemas'];
export type User = Schemas['User'];

const retried = new WeakSet<Request>();

const bearer: Middleware = {
  async onRequest({ request }) {
    request.headers.set('Authorization', `Bearer ${await accessToken()}`);
    return request;
  },
  // A token the service no longer takes (it expired early, say) is refreshed, and a request without
  // a body sent again once.
  async onResponse({ request, response }) {
    if (response.status !== 401 || request.body !== null || retried.has(request)) return response;
    const retry = new Request(request);
    retried.add(retry);
    retry.headers.set('Authorization', `Bearer ${await refresh()}`);
    const again = await fetch(retry);
    // Still refused with fresh tokens: the session behind them has ended (revoked, or signed out elsewhere).
    if (again.status === 401) return signIn(`${window.location.pathname}${window.location.search}`);
    return again;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin });
api.use(bearer);

/** An answer of the API that is not a success: its message is what the console shows. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** For VALIDATION_ERROR: each field the service refused, and why. */
    readonly details: Array<{ field: string; message: string }> = [],
  ) {
    super(message);
  }
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

/** The data of a successful answer, or ApiFailure with the API's own code and message. */
export async function ok<T>(call: Promise<Answer<T>>): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (response.ok && data !== undefined) return data as NonNullable<T>;
  if (response.ok) return undefined as unknown as NonNullable<T>;
  const envelope = (error ?? {}) as Partial<Schemas['ErrorResponse']>;
  throw new ApiFailure(
    response.status,
    envelope.error?.code ?? 'UNKNOWN',
    envelope.error?.message ?? `The service answered ${response.status} ${response.statusText}`.trim(),
    envelope.error?.details,
  );
}

/** The message to show for anything thrown by a call. */
export function messageOf(error: unknown): string {
  // A refused form names each field the service refused ("redirect_uris[0] must be https…").
  if (error instanceof ApiFailure && error.details.length > 0)
    return `${error.message}: ${error.details.map((problem) => `${problem.field.replace(/^body\./, '')} ${problem.message}`).join('; ')}`;
  if (error instanceof ApiFailure) return error.message;
  if (error instanceof TypeError) return 'The service cannot be reached. Check your connection and try again.';
  return error instanceof Error ? error.message : String(error);
}
