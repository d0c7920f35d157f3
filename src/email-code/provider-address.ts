import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AccountConfig, EmailCodeConfig } from '../config/index.js';
import { findLiveProviderEmailCode, insertEmailCode, recentEmailCodes } from './code-repository.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database, EmailCodeRow } from '../db/types.js';
import { RateLimited } from '../errors.js';
import type { Outbox } from '../infra/outbox.js';
import { recordEvent } from '../audit/audit-events.js';
import type { LoginGuard } from '../sessions/login-guard.js';
import { providerAddressMail } from '../mail/templates.js';
import type { ClientInfo } from '../principal.js';
import { sha256 } from '../sessions/tokens.js';
import { EmailCodeDigest, newCode } from './codes.js';
import { spendCountedCode } from './counted-code.js';

/** The sign-in waiting for its address to be proven. */
export interface AddressToProve {
  email: string;
  /** Whom the mail greets. */
  name: string;
  /** The provider's slug and the name people know it by. */
  provider: { slug: string; name: string };
  /** The provider sign-in the code completes. */
  providerCodeId: number;
  /** The account that holds the address, if one does. */
  userId: number | null;
}

export interface ProviderAddressParts {
  db: Kysely<Database>;
  transact: Transact;
  outbox: Outbox;
  /** SECRET_KEY: keys the digests of the codes. */
  secret: string;
  loginGuard?: LoginGuard;
}

/**
 * The proof of an address a provider gave without vouching for it: a six-digit code mailed to it,
 * under the e-mailed codes' rules (their lifetime, their limits per address, five wrong codes void
 * it, wrong codes count toward the account's lockout), but with no link, and found by a
 * verification token that only the application that exchanged the provider's code holds.
 */
export class ProviderAddressProof {
  private readonly digest: EmailCodeDigest;

  constructor(
    private readonly config: EmailCodeConfig,
    private readonly account: AccountConfig,
    private readonly parts: ProviderAddressParts,
  ) {
    this.digest = new EmailCodeDigest(parts.secret);
  }

  /**
   * Mails a code in the caller's transaction and returns the verification token that goes with it;
   * RateLimited when the address was sent a code within the last interval, or too many this hour.
   */
  async send(trx: UnitOfWork, to: AddressToProve, client: ClientInfo): Promise<string> {
    const intervalSeconds = this.account.passwordResetMailIntervalSeconds;
    const recent = await recentEmailCodes(trx, to.email, intervalSeconds);
    if (recent.withinSeconds > 0 || recent.withinHour >= this.account.passwordResetMailsPerHour)
      throw new RateLimited((recent.withinSeconds > 0 ? intervalSeconds : 3600) * 1000, {
        message: 'A code was sent to this e-mail address recently; try again later',
      });
    const code = newCode();
    const token = randomBytes(32).toString('base64url');
    const minutes = this.config.expireMinutes;
    await insertEmailCode(trx, {
      email: to.email,
      userId: to.userId,
      codeHash: this.digest.of(to.email, code),
      tokenHash: sha256(token),
      expiresAt: new Date(Date.now() + minutes * 60_000),
      providerCodeId: to.providerCodeId,
    });
    await this.parts.outbox.enqueue(trx, providerAddressMail(to.email, to.name, code, to.provider.name, minutes));
    await recordEvent(trx, {
      type: 'email_code.requested',
      actor: null,
      subject: to.userId,
      details: { signup: to.userId === null, provider: to.provider.slug },
      origin: client,
    });
    return token;
  }

  /** Call once the transaction that sent a code has committed. */
  flush(): void {
    this.parts.outbox.wake();
  }

  /**
   * Spends the code of a verification token, one counted attempt: the row, naming the provider
   * sign-in it completes; InvalidCode for a wrong, used or expired code or an unknown token.
   */
  async spend(verificationToken: string, code: string, client: ClientInfo): Promise<EmailCodeRow> {
    const tokenHash = sha256(verificationToken);
    const waiting = await findLiveProviderEmailCode(this.parts.db, tokenHash);
    return spendCountedCode(this.parts, this.digest, {
      email: waiting?.email ?? '',
      code,
      find: (trx) => findLiveProviderEmailCode(trx, tokenHash),
      method: 'provider',
      client,
    });
  }
}
