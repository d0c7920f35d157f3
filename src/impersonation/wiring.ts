import { tokenExchangeGrant } from '../oidc/token-exchange.js';
import type { Core } from '../wiring/core.js';
import { Impersonation } from './impersonation.js';

/** Admins acting as a user (IMPERSONATION_ENABLED): the provider's token-exchange grant. */
export function impersonationGrant(core: Pick<Core, 'config' | 'db' | 'transact' | 'tokens' | 'mail'>) {
  const impersonation = new Impersonation(core.db, core.transact, core.tokens, core.mail, core.config.impersonation.notice);
  return tokenExchangeGrant(core.db, core.tokens, impersonation);
}
