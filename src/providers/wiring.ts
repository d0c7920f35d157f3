import { ProviderAddressProof } from '../email-code/provider-address.js';
import type { MailboxClaim } from '../mailbox/claim.js';
import type { MfaSignIn } from '../mfa/mfa-sign-in.js';
import type { RedirectConfig } from '../redirects/allow-list.js';
import type { Core } from '../wiring/core.js';
import { LinkedIdentities } from './identities.js';
import { IdentityProviderRegistry } from './registry.js';
import { ProviderSignIn } from './sign-in.js';
import { Upstream } from './upstream.js';

/** Signing in with other providers: the admins' registry of providers, the sign-in flow, and a person's linked identities. */
export function providersRoom(
  core: Pick<Core, 'config' | 'db' | 'transact' | 'outbox' | 'mail' | 'tokens' | 'passwords' | 'loginGuard'>,
  /** `redirects`: where a provider sign-in may end (the allow-list, with the hosted pages' return address). */
  needs: { mfa: MfaSignIn; mailbox: MailboxClaim; redirects: RedirectConfig },
) {
  const { config, db, transact, outbox, mail, tokens, passwords, loginGuard } = core;
  const providers = new IdentityProviderRegistry(db, transact, config.secret.key, config.providers.allowPrivateUrls);
  const providerSignIn = new ProviderSignIn(db, transact, providers, new Upstream(config.providers.allowPrivateUrls), tokens, passwords, {
    mail,
    redirects: needs.redirects,
    sessions: config.sessions,
    secretKey: config.secret.key,
    // An address the provider does not vouch for is proven with an e-mailed code first.
    addressProof: new ProviderAddressProof(config.emailCode, config.account, {
      db,
      transact,
      outbox,
      secret: config.secret.key,
      loginGuard,
    }),
    mailbox: needs.mailbox,
    loginGuard,
    secondFactor: needs.mfa,
  });
  return { providers, providerSignIn, identities: new LinkedIdentities(db, transact) };
}
