import type { BreachedPasswords } from '../passwords/breached-passwords.js';
import type { MfaSignIn } from '../mfa/mfa-sign-in.js';
import type { Core } from '../wiring/core.js';
import { AuthService, type OrganizationMembership } from './auth.js';
import { UserSessions } from './user-sessions.js';

/** Registration, sign-in, refresh and logout, and an admin's view of a user's sessions: sign-in needs the second step of a sign-in and the breached-password check. */
export function sessionsRoom(
  core: Pick<Core, 'config' | 'db' | 'tokens' | 'mail' | 'passwords' | 'transact' | 'loginGuard'>,
  needs: { mfa: MfaSignIn; breached: BreachedPasswords | undefined; organizations: OrganizationMembership },
) {
  const { config, db, tokens, mail, passwords, transact, loginGuard } = core;
  return {
    auth: new AuthService(
      db,
      config.sessions,
      tokens,
      mail,
      passwords,
      transact,
      loginGuard,
      needs.mfa,
      needs.breached,
      needs.organizations,
    ),
    userSessions: new UserSessions(db, transact),
  };
}
