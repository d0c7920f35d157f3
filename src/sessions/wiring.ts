import type { BreachedPasswords } from '../passwords/breached-passwords';
import type { MfaSignIn } from '../mfa/mfa-sign-in';
import type { Core } from '../wiring/core';
import { AuthService } from './auth';

/** Registration, sign-in, refresh and logout: they need the second step of a sign-in and the breached-password check. */
export function sessionsRoom(
  core: Pick<Core, 'config' | 'db' | 'tokens' | 'mail' | 'passwords' | 'transact' | 'loginGuard'>,
  needs: { mfa: MfaSignIn; breached: BreachedPasswords | undefined },
) {
  const { config, db, tokens, mail, passwords, transact, loginGuard } = core;
  return { auth: new AuthService(db, config.sessions, tokens, mail, passwords, transact, loginGuard, needs.mfa, needs.breached) };
}
