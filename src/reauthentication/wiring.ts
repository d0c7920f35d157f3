import type { TotpCodes } from '../mfa/totp.js';
import type { OrganizationMembership } from '../sessions/auth.js';
import type { Core } from '../wiring/core.js';
import { Reauthentication } from './reauthentication.js';

/** Proof of presence before a new way in, and the re-authentication that renews it. */
export function reauthenticationRoom(
  core: Pick<Core, 'config' | 'db' | 'transact' | 'tokens' | 'currentPassword' | 'now' | 'loginGuard'>,
  needs: { totp: TotpCodes; organizations: OrganizationMembership },
) {
  const { config, db, transact, tokens, currentPassword, now, loginGuard } = core;
  return {
    reauthentication: new Reauthentication(db, transact, tokens, currentPassword, needs.totp, config.sessions, {
      now,
      loginGuard,
      organizations: needs.organizations,
    }),
  };
}
