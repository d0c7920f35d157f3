import { randomBytes } from 'node:crypto';
import { deleteUserApiKeys, listApiKeys } from '../api-keys/api-key-repository.js';
import { deleteRecoveryCodes, deleteUserFactors } from '../mfa/factor-repository.js';
import { deleteUserIdentity, listUserIdentities } from '../providers/identity-repository.js';
import { voidUserChallenges } from '../mfa/challenge-repository.js';
import { deleteUserOidcRecords } from '../oidc/record-repository.js';
import { queueBackchannelLogouts } from '../oidc/backchannel-logout.js';
import { listLiveSessions, revokeUserSessions } from '../sessions/session-repository.js';
import type { UnitOfWork } from '../db/transaction.js';
import type { UserRow } from '../db/types.js';
import { hasKnownPassword, markPasswordUnknown, updateLiveUser } from '../users/user-repository.js';
import { InvalidToken } from '../errors.js';
import type { Outbox } from '../infra/outbox.js';
import { recordEvent } from '../audit/audit-events.js';
import { mailboxClaimedMail, type EndedWaysList } from '../mail/templates.js';
import type { PasswordHasher } from '../passwords/passwords.js';
import type { ClientInfo } from '../principal.js';

/** How the mailbox was proven: an e-mailed code or link, a provider, a password reset link. */
export type ProofRoute = 'email_code' | 'provider' | 'password_reset';

/** The ways in a claim ended, as the mail and the audit trail tell them. */
export type EndedWays = EndedWaysList;

/**
 * An address nobody has proven belongs to nobody. Whoever registered it first, with a password
 * of their own, set up keys, factors or linked identities, did so without showing that the mailbox
 * is theirs; the first proof of the mailbox (a code, a provider vouching for it, a reset link)
 * hands the account to the mailbox's holder and ends every one of those ways in, in the same
 * transaction as the proof, with a mail saying what went. An account whose address was already
 * verified is left as it is.
 */
export class MailboxClaim {
  /** A hash of a random secret nobody keeps, made once: the password of a claimed account. */
  private unknownPassword?: Promise<string>;

  constructor(
    private readonly outbox: Outbox,
    private readonly passwords: PasswordHasher,
  ) {}

  /**
   * Marks the user's address verified, proven by `route`; when it was not verified before, ends
   * every way in set up before this proof. A reset keeps the password it sets (the caller sets it
   * after this). Returns the user as it now is. The caller's transaction holds the proof.
   */
  async prove(trx: UnitOfWork, user: UserRow, route: ProofRoute, client: ClientInfo): Promise<UserRow> {
    if (user.email_verified) return user;
    const ended = await this.endWays(trx, user, route, client);
    const hash = route === 'password_reset' ? undefined : await this.unknownPasswordHash();
    const verified = await updateLiveUser(trx, user.id, { email_verified: true, ...(hash ? { password_hash: hash } : {}) });
    if (!verified) throw new InvalidToken();
    if (hash) await markPasswordUnknown(trx, user.id);
    await recordEvent(trx, {
      type: 'email.verified',
      actor: user.id,
      subject: user.id,
      details: {
        method: route,
        password_removed: ended.password,
        sessions_ended: ended.sessions,
        api_keys_removed: ended.apiKeys,
        factors_removed: ended.factors,
        identities_removed: ended.identities.length,
      },
      origin: client,
    });
    if (somethingEnded(ended)) await this.outbox.enqueue(trx, mailboxClaimedMail(verified.email, verified.name, route, ended));
    return verified;
  }

  /** Call once the transaction of a proof has committed: its mail goes out. */
  flush(): void {
    this.outbox.wake();
  }

  private async endWays(trx: UnitOfWork, user: UserRow, route: ProofRoute, client: ClientInfo): Promise<EndedWays> {
    const id = user.id;
    const reason = 'email_claimed';
    const event = { actor: id, subject: id, origin: client };
    const password = route !== 'password_reset' && (await hasKnownPassword(trx, id));

    const sessions = await listLiveSessions(trx, id);
    await revokeUserSessions(trx, id);
    await queueBackchannelLogouts(trx, { userId: id });
    await deleteUserOidcRecords(trx, id);
    if (sessions.length > 0)
      await recordEvent(trx, { ...event, type: 'session.revoked', details: { session_id: null, all: true, reason } });

    const keys = await listApiKeys(trx, id);
    await deleteUserApiKeys(trx, id);
    for (const key of keys)
      await recordEvent(trx, { ...event, type: 'api_key.deleted', details: { api_key_id: key.id, prefix: key.prefix, reason } });

    const factors = await deleteUserFactors(trx, id);
    await deleteRecoveryCodes(trx, id);
    await voidUserChallenges(trx, id);
    if (factors > 0) await recordEvent(trx, { ...event, type: 'mfa.reset', details: { factors_removed: factors, reason } });

    const identities = await listUserIdentities(trx, id);
    for (const identity of identities) {
      await deleteUserIdentity(trx, id, identity.id);
      await recordEvent(trx, {
        ...event,
        type: 'identity.unlinked',
        details: { provider: identity.provider, identity_id: identity.id, subject: identity.subject, reason },
      });
    }
    return { password, sessions: sessions.length, apiKeys: keys.length, factors, identities: identities.map((i) => i.provider) };
  }

  private unknownPasswordHash(): Promise<string> {
    this.unknownPassword ??= this.passwords.hash(randomBytes(32).toString('base64url')).catch((error: unknown) => {
      this.unknownPassword = undefined;
      throw error;
    });
    return this.unknownPassword;
  }
}

function somethingEnded(ended: EndedWays): boolean {
  return ended.password || ended.sessions > 0 || ended.apiKeys > 0 || ended.factors > 0 || ended.identities.length > 0;
}
