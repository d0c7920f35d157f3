import type { MailboxClaim } from '../mailbox/claim.js';
import type { MfaSignIn } from '../mfa/mfa-sign-in.js';
import type { Core } from '../wiring/core.js';
import { EmailCodeSignIn } from './email-code-sign-in.js';

/** Signing in with an e-mailed code or link. */
export function emailCodeRoom(
  core: Pick<Core, 'config' | 'db' | 'transact' | 'outbox' | 'tokens' | 'passwords' | 'logger' | 'loginGuard'>,
  needs: { mfa: MfaSignIn; mailbox: MailboxClaim },
) {
  const { config, db, transact, outbox, tokens, passwords, logger, loginGuard } = core;
  const emailCode = new EmailCodeSignIn(config.emailCode, config.account, config.redirects, {
    db,
    transact,
    outbox,
    tokens,
    passwords,
    logger,
    secret: config.secret.key,
    loginGuard,
    secondFactor: needs.mfa,
    mailbox: needs.mailbox,
  });
  return { emailCode };
}
