import type { Context as KoaContext } from 'koa';
import type { Context as ApiContext } from 'openapi-backend';
import type { ClientInfo, Principal } from '../principal.js';
import { bearerToken } from './bearer.js';
import { unauthorized } from './errors.js';
import { clientOf } from './request.js';
import { stateOf } from './state.js';

/** Turns an access token into its principal, or throws the 401 that says why not. */
export type Authenticate = (accessToken: string, client: ClientInfo) => Promise<Principal>;

/** The caller of the request, from its bearer token; sets `ctx.state.principal`. */
export function principalOf(ctx: KoaContext, authenticate: Authenticate): Promise<Principal> {
  const state = stateOf(ctx);
  // Both security schemes of an operation land here: authenticate once per request.
  state.authentication ??= (async () => {
    const token = bearerToken(ctx.get('authorization'));
    if (token === undefined) throw unauthorized();
    const principal = await authenticate(token, clientOf(ctx));
    state.principal = principal;
    // An admin acting as the user: every event the request causes names the admin (see recordEvent).
    if (principal.impersonator) state.client = principal.client;
    return principal;
  })();
  return state.authentication;
}

/** Why openapi-backend refused the request's security: a 401 that says why, or a failure (the database, say) to pass on. */
export function securityFailure(security: ApiContext['security']): unknown {
  const results = Object.values(security) as unknown[];
  const failure = results.find(
    (result): result is { error: unknown } => typeof result === 'object' && result !== null && 'error' in result && Boolean(result.error),
  );
  return failure?.error ?? unauthorized();
}
