import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { Unauthorized } from '../errors.js';
import type { ClientInfo, Principal } from '../principal.js';
import { findAuthenticatedUser, findSessionAuthenticatedAt } from '../sessions/session-repository.js';
import type { Provider } from './library.js';
import { findServiceSessionOfProviderSession } from './record-repository.js';
import { userIdOf } from './adapter.js';

/**
 * The API's side of the provider's access tokens: a first-party client (the console, or one an admin
 * marked first party) calls the API with the access token the provider gave it, as the service's own
 * sign-in would. The token must be live, issued to a first-party client for a person, through a
 * provider session the hosted sign-in opened; its principal is that session's, which the person sees
 * in their list and can revoke. Any other client's tokens are for its own use (userinfo) and get 401.
 */
export function providerTokenAuthenticator(
  instance: () => Promise<Provider>,
  db: Kysely<Database>,
  firstParty: (clientId: string) => Promise<boolean>,
) {
  return async (accessToken: string, client: ClientInfo): Promise<Principal> => {
    const provider = await instance();
    const token = await provider.AccessToken.find(accessToken);
    if (!token || token.isExpired || !token.accountId || !token.clientId || !token.sessionUid) throw new Unauthorized();
    if (!(await firstParty(token.clientId))) throw new Unauthorized();
    const sessionId = await findServiceSessionOfProviderSession(db, token.sessionUid);
    const userId = userIdOf(token.accountId);
    if (!sessionId || userId === null) throw new Unauthorized();
    const user = await findAuthenticatedUser(db, userId, sessionId);
    const authenticatedAt = user && (await findSessionAuthenticatedAt(db, sessionId));
    if (!user || !authenticatedAt) throw new Unauthorized();
    return { user, sessionId, authenticatedAt, client };
  };
}
