import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AccountConfig, EmailCodeConfig, RedirectConfig } from '../config/index.js';
import { findLiveEmailCode, findLiveEmailCodeEmail, insertEmailCode, recentEmailCodes, useEmailCodeToken } from './code-repository.js';
import type { Transact } from '../db/transaction.js';
import type { Database, EmailCodeRow, UserRow } from '../db/types.js';
import { findUserByEmail, findUserById, insertUser, markPasswordUnknown } from '../users/user-repository.js';
import { Forbidden, InvalidCode, InvalidRedirect, InvalidToken, MfaRequired } from '../errors.js';
import { AfterAnswer } from '../infra/after-answer.js';
import type { Outbox } from '../infra/outbox.js';
import type { Logger } from '../logger.js';
import type { MailboxClaim } from '../mailbox/claim.js';
import { allowedRedirect } from '../redirects/allow-list.js';
import { recordEvent } from '../audit/audit-events.js';
import { type SecondFactorGate } from '../sessions/auth.js';
import { normalizeEmail, requestedEmail } from '../email-address.js';
import type { LoginGuard } from '../sessions/login-guard.js';
import { emailCodeMail } from '../mail/templates.js';
import { clientCaller, type PasswordHasher } from '../passwords/passwords.js';
import type { ClientInfo } from '../principal.js';
import { openSession, type TokenPair } from '../sessions/session-start.js';
import { joinByDomain, refuseUnlessSso } from '../organizations/domain-policy.js';
import { sha256, type Assurance, type TokenService } from '../sessions/tokens.js';
import { EmailCodeDigest, newCode } from './codes.js';
import { spendCountedCode } from './counted-code.js';

/**
 * RFC 8176 has no value for a secret sent to a mailbox; a single-use code is a one-time password,
 * and the link carries the same secret's twin, so both sign in as `otp` (as GoTrue reports e-mail
 * codes). Alone it is one factor: `aal1`.
 */
export const EMAIL_CODE_ASSURANCE: Assurance = Object.freeze({ amr: Object.freeze(['otp']), aal: 'aal1' });

/** What proves the mailbox: the code typed with its address, or the link's token. */
export type EmailCodeProof = { email: string; code: string } | { token: string };

/** The parts of the service it works with. */
export interface EmailCodeParts {
  db: Kysely<Database>;
  transact: Transact;
  outbox: Outbox;
  tokens: TokenService;
  passwords: PasswordHasher;
  logger: Logger;
  /** SECRET_KEY: keys the digests of the codes. */
  secret: string;
  /** Per-account lockout; absent when rate limiting is off. */
  loginGuard?: LoginGuard;
  /** Asks users with a second factor for it before any session opens. */
  secondFactor?: SecondFactorGate;
  /** Hands an account whose address was never verified to the mailbox's holder. */
  mailbox: MailboxClaim;
}

/**
 * Signing in with nothing but an inbox: one mail carries a six-digit code and a link, either of
 * which signs in once and voids the other. The answer to a request comes before the address is
 * looked up, so its time and body say nothing about which addresses have accounts; the mail is
 * sent at most once a minute and `PASSWORD_RESET_MAILS_PER_HOUR` times an hour per address, as
 * reset links are. Wrong codes count toward the account's lockout as failed logins do; a right
 * one clears this client's count only once the sign-in completes, as a password does.
 */
export class EmailCodeSignIn {
  private readonly later = new AfterAnswer();
  private readonly digest: EmailCodeDigest;

  constructor(
    private readonly config: EmailCodeConfig,
    private readonly account: AccountConfig,
    private readonly redirects: RedirectConfig,
    private readonly parts: EmailCodeParts,
  ) {
    this.digest = new EmailCodeDigest(parts.secret);
  }

  /**
   * Checks `redirectTo` against the allow-list (400 otherwise) and answers; the lookup, the code and
   * the mail happen after the answer. Failures are logged.
   *
   * The link leads to the page that spends its token: this service's `/sign-in` when it serves the
   * account pages (carrying `redirectTo`, where that page sends the person once signed in), else
   * `redirectTo`, the application's own page, or `{APP_URL}/sign-in`.
   */
  request(email: string, redirectTo: string | undefined, client: ClientInfo): void {
    let linkBase = new URL(`${this.account.appUrl}/sign-in`);
    if (redirectTo !== undefined) {
      const allowed = allowedRedirect(this.redirects, redirectTo);
      if (!allowed) throw new InvalidRedirect();
      if (this.account.pagesEnabled) linkBase.searchParams.set('redirect_to', allowed.href);
      else linkBase = allowed;
    }
    this.later.run(
      () => this.send(normalizeEmail(email), linkBase, client),
      (error: unknown) =>
        this.parts.logger.error({ err: error, requestId: client.requestId }, 'email-code: the sign-in code could not be queued'),
    );
  }

  /** The address a link's token was sent to while it still signs in, without spending it; for the page it opens. */
  addressOf(token: string): Promise<string | undefined> {
    return findLiveEmailCodeEmail(this.parts.db, sha256(token));
  }

  /** Resolves once the work started after earlier answers has finished. */
  settled(): Promise<void> {
    return this.later.settled();
  }

  /**
   * Spends a code or a link and signs in: the body of a password login, or `MfaRequired` for a user
   * with a second factor. A wrong code is a 400 `INVALID_CODE` and a failed login; an unknown,
   * expired or used link is a 400 `INVALID_TOKEN`.
   */
  async verify(proof: EmailCodeProof, client: ClientInfo): Promise<{ user: UserRow; tokens: TokenPair }> {
    const spent = 'token' in proof ? await this.spendToken(proof.token) : await this.spendCode(proof.email, proof.code, client);
    const via = 'token' in proof ? 'link' : 'code';
    const refused = 'token' in proof ? () => new InvalidToken() : () => new InvalidCode();
    const { db, transact } = this.parts;

    let user = spent.user_id === null ? await findUserByEmail(db, spent.email) : await findUserById(db, spent.user_id);
    // An account deleted, or moved to another address, since the mail went out is not this one.
    if (user && (user.deleted_at !== null || user.email !== spent.email)) throw refused();
    if (!user && !this.config.signup) throw refused();
    if (user && !user.is_active) {
      const subject = user.id;
      await transact((trx) =>
        recordEvent(trx, {
          type: 'login.failed',
          actor: null,
          subject,
          details: { reason: 'account_disabled', method: 'email_code' },
          origin: client,
        }),
      );
      throw new Forbidden('Account is disabled');
    }
    user = user ? await this.markVerified(user, client) : await this.createAccount(spent.email, client);
    await refuseUnlessSso(db, user);

    const second = await this.parts.secondFactor?.challenge(user, client, EMAIL_CODE_ASSURANCE.amr);
    if (second) throw new MfaRequired(second.mfaToken, second.methods);
    const signedIn = user;
    const { tokens } = await transact(async (trx) => {
      // The code proved the address: its organisation's people join it.
      await joinByDomain(trx, signedIn, client);
      const opened = await openSession(trx, this.parts.tokens, signedIn, client, EMAIL_CODE_ASSURANCE);
      await recordEvent(trx, {
        type: 'login.succeeded',
        actor: signedIn.id,
        subject: signedIn.id,
        details: { session_id: opened.sessionId, method: 'email_code', via, amr: [...EMAIL_CODE_ASSURANCE.amr] },
        origin: client,
      });
      return opened;
    });
    // Tokens are issued: the sign-in is complete, and this client's failed attempts start again.
    await this.parts.loginGuard?.signInCompleted(signedIn.email, client.ip);
    return { user: signedIn, tokens };
  }

  private async send(email: string, linkBase: URL, client: ClientInfo): Promise<void> {
    const { db, transact, outbox, logger } = this.parts;
    const user = await findUserByEmail(db, email);
    if (user ? user.deleted_at !== null || !user.is_active : !this.config.signup) return;
    const code = newCode();
    const token = randomBytes(32).toString('base64url');
    const link = new URL(linkBase);
    link.searchParams.set('token', token);
    const minutes = this.config.expireMinutes;
    const sent = await transact(async (trx) => {
      const recent = await recentEmailCodes(trx, email, this.account.passwordResetMailIntervalSeconds);
      if (recent.withinSeconds > 0 || recent.withinHour >= this.account.passwordResetMailsPerHour) return false;
      await insertEmailCode(trx, {
        email,
        userId: user?.id ?? null,
        codeHash: this.digest.of(email, code),
        tokenHash: sha256(token),
        expiresAt: new Date(Date.now() + minutes * 60_000),
      });
      const name = user?.name ?? localPart(email);
      await outbox.enqueue(trx, emailCodeMail(email, name, code, link.href, minutes, user === undefined));
      await recordEvent(trx, {
        type: 'email_code.requested',
        actor: null,
        subject: user?.id ?? null,
        details: { signup: user === undefined },
        origin: client,
      });
      return true;
    });
    if (sent) outbox.wake();
    else
      logger.info(
        { userId: user?.id ?? null, requestId: client.requestId },
        'email-code: no new code, one was sent to this address recently',
      );
  }

  private async spendToken(token: string): Promise<EmailCodeRow> {
    const spent = await useEmailCodeToken(this.parts.db, sha256(token));
    if (!spent) throw new InvalidToken();
    return spent;
  }

  private spendCode(email: string, code: string, client: ClientInfo): Promise<EmailCodeRow> {
    const address = requestedEmail(email, 'body.email');
    return spendCountedCode(this.parts, this.digest, {
      email: address,
      code,
      find: (trx) => findLiveEmailCode(trx, address),
      method: 'email_code',
      client,
    });
  }

  /**
   * The code proved the address: it counts as verified from now on, and an account whose address
   * was never verified before becomes the mailbox holder's alone (every earlier way in ends).
   */
  private async markVerified(user: UserRow, client: ClientInfo): Promise<UserRow> {
    if (user.email_verified) return user;
    const { mailbox } = this.parts;
    const verified = await this.parts.transact(async (trx) => {
      const current = await findUserById(trx, user.id);
      if (!current || current.deleted_at !== null || current.email !== user.email) throw new InvalidCode();
      return mailbox.prove(trx, current, 'email_code', client);
    });
    mailbox.flush();
    return verified;
  }

  /**
   * EMAIL_CODE_SIGNUP: the account of an address that proved itself, named after the address's
   * local part, verified, with a random password nobody knows (forgot-password sets one; `password_set` says so). An
   * account made for the address meanwhile is the one signed in.
   */
  private async createAccount(email: string, client: ClientInfo): Promise<UserRow> {
    const passwordHash = await this.parts.passwords.hash(randomBytes(32).toString('base64url'), clientCaller(client));
    return this.parts.transact(async (trx) => {
      const created = await insertUser(trx, {
        email,
        name: localPart(email),
        password_hash: passwordHash,
        role: 'user',
        email_verified: true,
      });
      if (!created) {
        const existing = await findUserByEmail(trx, email);
        if (!existing || existing.deleted_at !== null || !existing.is_active) throw new InvalidCode();
        return existing;
      }
      await markPasswordUnknown(trx, created.id);
      await recordEvent(trx, {
        type: 'user.registered',
        actor: created.id,
        subject: created.id,
        details: { method: 'email_code' },
        origin: client,
      });
      return created;
    });
  }
}

/** The part of an address before its last `@`, at most 100 characters: a name to start with. */
function localPart(email: string): string {
  return email.slice(0, email.lastIndexOf('@')).slice(0, 100).trim() || email;
}
