import type { TotpCodes } from '../mfa/totp';
import type { Core } from '../wiring/core';
import { Reauthentication } from './reauthentication';

/** Proof of presence before a new way in, and the re-authentication that renews it. */
export function reauthenticationRoom(
  core: Pick<Core, 'config' | 'db' | 'transact' | 'tokens' | 'currentPassword' | 'now' | 'loginGuard'>,
  needs: { totp: TotpCodes },
) {
  const { config, db, transact, tokens, currentPassword, now, loginGuard } = core;
  return {
    reauthentication: new Reauthentication(db, transact, tokens, currentPassword, needs.totp, config.sessions, { now, loginGuard }),
  };
}
