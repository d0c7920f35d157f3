import type { OrganizationMembership } from '../sessions/auth.js';
import type { Core } from '../wiring/core.js';
import { FactorService } from './factors.js';
import { MfaSignIn } from './mfa-sign-in.js';
import { TotpCodes } from './totp.js';
import { WebAuthnParty } from './webauthn.js';

/** Second factors and passkeys: what they need of the core, and the services they offer (TOTP codes for re-authentication too). */
export function mfaRoom(
  core: Pick<Core, 'config' | 'db' | 'transact' | 'tokens' | 'mail' | 'now' | 'loginGuard'>,
  needs: { organizations?: OrganizationMembership } = {},
) {
  const { config, db, transact, tokens, mail, now, loginGuard } = core;
  const totp = new TotpCodes(config.mfa.totp, config.secret.key);
  const webauthn = new WebAuthnParty(config.mfa.webauthn);
  const factors = new FactorService(db, transact, totp, webauthn, now, mail);
  const mfa = new MfaSignIn(db, tokens, transact, totp, webauthn, factors, {
    now,
    requireVerifiedEmail: config.sessions.requireVerifiedEmail,
    loginGuard,
    organizations: needs.organizations,
  });
  return { factors, mfa, totp };
}
