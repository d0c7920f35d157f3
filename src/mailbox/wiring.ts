import type { Core } from '../wiring/core.js';
import { MailboxClaim } from './claim.js';

/** The first proof of a mailbox never verified, which ends every way in set up before it; used by the routes that prove one. */
export function mailboxRoom(core: Pick<Core, 'outbox' | 'passwords'>) {
  return { mailbox: new MailboxClaim(core.outbox, core.passwords) };
}
