import type Koa from 'koa';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Impersonation, SubjectOfToken } from '../impersonation/impersonation.js';
import type { ClientInfo } from '../principal.js';
import type { TokenService } from '../sessions/tokens.js';
import { userIdOf } from './adapter.js';
import { TOKEN_EXCHANGE } from './clients.js';
import type { Provider, ProviderModule } from './library.js';
import { findServiceSessionOfProviderSession } from './record-repository.js';
import { SELF_REGISTERED } from './registration.js';

export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** The parameters of the grant beyond `grant_type` (RFC 8693 §2.1) that the service reads. */
const PARAMETERS = ['subject_token', 'subject_token_type', 'requested_subject'];

/** The token endpoint's errors this grant answers with (oidc-provider's classes). */
type OAuthErrors = Record<'InvalidGrant' | 'AccessDenied' | 'InvalidRequest' | 'UnauthorizedClient', new (description: string) => Error>;

/** A grant type the provider's token endpoint takes beside its own, registered with `registerGrantType`. */
export interface ExtraGrantType {
  type: string;
  parameters: string[];
  /** `firstParty`: whether a client is first party (a built-in one, or one an admin marked so). */
  handler(errors: ProviderModule['errors'], firstParty: (clientId: string) => Promise<boolean>): (ctx: Koa.Context) => Promise<void>;
}

interface ExchangeContext {
  oidc: {
    provider: Provider;
    client: { clientId: string; clientAuthMethod: string; metadata(): Record<string, unknown> };
    params: Record<string, string | undefined>;
  };
}

/**
 * Token exchange (RFC 8693) at `POST /oauth2/token`: a confidential client that an admin created
 * with the grant trades an admin's access token for an access token of the API for a user, which
 * names the admin (`act`). The rules are Impersonation's; here the request is read and answered.
 */
export function tokenExchangeGrant(db: Kysely<Database>, tokens: TokenService, impersonation: Impersonation): ExtraGrantType {
  return {
    type: TOKEN_EXCHANGE,
    parameters: PARAMETERS,
    handler(libraryErrors, firstParty) {
      const errors = libraryErrors as unknown as OAuthErrors;
      return async (ctx) => {
        const { provider, client, params } = (ctx as unknown as ExchangeContext).oidc;
        if (client.clientAuthMethod === 'none' || client.metadata()[SELF_REGISTERED] === true)
          throw new errors.UnauthorizedClient('token exchange is for confidential clients an admin created');
        if (params.subject_token_type !== ACCESS_TOKEN_TYPE)
          throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
        if (!params.subject_token) throw new errors.InvalidRequest('missing required parameter subject_token');
        if (!params.requested_subject) throw new errors.InvalidRequest('missing required parameter requested_subject');
        const subject = await subjectOf(db, tokens, provider, params.subject_token, client.clientId, firstParty);
        const result = await impersonation.start(subject, params.requested_subject, client.clientId, clientOf(ctx));
        if (!result.ok) {
          const { error, description } = result.refusal;
          throw new (
            error === 'access_denied' ? errors.AccessDenied : error === 'invalid_request' ? errors.InvalidRequest : errors.InvalidGrant
          )(description);
        }
        ctx.body = {
          access_token: result.accessToken,
          issued_token_type: ACCESS_TOKEN_TYPE,
          token_type: 'Bearer',
          expires_in: result.expiresInSeconds,
        };
      };
    },
  };
}

/**
 * Whom a subject token speaks for: an access token of the API (not one that is itself an admin
 * acting as someone), or a live access token the provider issued for a sign-in of the hosted pages
 * to a first-party client or to the client exchanging it. Undefined for anything else.
 */
async function subjectOf(
  db: Kysely<Database>,
  tokens: TokenService,
  provider: Provider,
  token: string,
  clientId: string,
  firstParty: (clientId: string) => Promise<boolean>,
): Promise<SubjectOfToken | undefined> {
  if (token.includes('.')) {
    const verified = tokens.verify(token, 'access');
    if (!verified.ok || verified.claims.act !== undefined) return undefined;
    return { userId: Number(verified.claims.sub), sessionId: verified.claims.sid };
  }
  const found = await provider.AccessToken.find(token);
  if (!found || found.isExpired || !found.accountId || !found.clientId || !found.sessionUid) return undefined;
  if (found.clientId !== clientId && !(await firstParty(found.clientId))) return undefined;
  const userId = userIdOf(found.accountId);
  const sessionId = await findServiceSessionOfProviderSession(db, found.sessionUid);
  return userId === null || !sessionId ? undefined : { userId, sessionId };
}

/** The client of the request, as the events it causes keep it. */
function clientOf(ctx: Koa.Context): ClientInfo {
  const requestId = ctx.res.getHeader('x-request-id');
  return {
    ip: ctx.ip || null,
    userAgent: ctx.get('user-agent').slice(0, 512) || null,
    requestId: typeof requestId === 'string' ? requestId : null,
  };
}
