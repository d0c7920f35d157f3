import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import {
  confirmTotpFactor,
  countConfirmedFactors,
  countRecoveryCodes,
  deleteFactor,
  deletePendingTotpFactors,
  deleteRecoveryCodes,
  deleteUserFactors,
  findFactor,
  findUserHandle,
  insertFactor,
  listConfirmedFactors,
  replaceRecoveryCodes,
} from './factor-repository.js';
import { isUniqueViolation } from '../db/errors.js';
import { consumeChallenge, insertChallenge, voidUserChallenges } from './challenge-repository.js';
import { findSessionAssurance, raiseSessionAssurance, revokeUserSessions } from '../sessions/session-repository.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database, MfaFactorRow } from '../db/types.js';
import { findUserById } from '../users/user-repository.js';
import { Conflict, InvalidCode, InvalidPasskey, NotFound } from '../errors.js';
import type { AccountMail } from '../mail/account-mail.js';
import { recordEvent } from '../audit/audit-events.js';
import { requireAdmin, sessionOf, type Principal } from '../principal.js';
import { newRecoveryCodes, recoveryCodeHash } from './recovery-codes.js';
import type { TotpCodes } from './totp.js';
import { CHALLENGE_TTL_MS, type WebAuthnParty } from './webauthn.js';

/** What the clock of the factor rules reads: milliseconds since the epoch. */
export type Clock = () => number;

type PasskeyCredential = { id: string; response: { clientDataJSON: string } } & Record<string, unknown>;

/**
 * A user's second factors: enrolling and confirming TOTP apps, registering passkeys, listing and
 * removing them, recovery codes, and an admin's reset. The first factor a user confirms makes every
 * live session of theirs `aal2`: the others are revoked and the current one is raised. Each factor
 * confirmed and each new set of recovery codes is mailed to the account. Spent and expired
 * challenges are purged by housekeeping.
 */
export class FactorService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    private readonly totp: TotpCodes,
    private readonly webauthn: WebAuthnParty,
    private readonly now: Clock,
    private readonly mail: AccountMail,
  ) {}

  async list(principal: Principal): Promise<{ factors: MfaFactorRow[]; recoveryCodesRemaining: number }> {
    const [factors, recoveryCodesRemaining] = await Promise.all([
      listConfirmedFactors(this.db, principal.user.id),
      countRecoveryCodes(this.db, principal.user.id),
    ]);
    return { factors, recoveryCodesRemaining };
  }

  /** A pending TOTP factor (replacing any earlier pending one) with its secret, shown this once. */
  async enrolTotp(principal: Principal, name: string | undefined): Promise<{ factor: MfaFactorRow; secret: string; otpauthUrl: string }> {
    const { user } = principal;
    const secret = this.totp.newSecret();
    const factor = await this.transact(async (trx) => {
      await deletePendingTotpFactors(trx, user.id);
      const row = await insertFactor(trx, {
        user_id: user.id,
        type: 'totp',
        name: name?.trim() || 'Authenticator app',
        totp_secret_sealed: secret.sealed,
      });
      await recordEvent(trx, {
        type: 'mfa.totp_enrolment_started',
        actor: user.id,
        subject: user.id,
        details: { factor_id: row.id },
        origin: principal.client,
      });
      return row;
    });
    return { factor, secret: secret.base32, otpauthUrl: this.totp.url(secret.base32, user.email) };
  }

  /** Confirms a pending TOTP factor with a current code; recovery codes come with the user's first factor. */
  async confirmTotp(principal: Principal, id: number, code: string): Promise<{ factor: MfaFactorRow; recoveryCodes?: string[] }> {
    const { user } = principal;
    const pending = await findFactor(this.db, user.id, id);
    if (!pending || pending.type !== 'totp') throw new NotFound('Factor not found');
    if (pending.confirmed_at !== null) throw new Conflict('Factor already confirmed');
    const step = this.totp.stepOf(pending.totp_secret_sealed!, code, this.now());
    const confirmed = await this.transact(async (trx) => {
      const factor = step === undefined ? undefined : await confirmTotpFactor(trx, id, step);
      if (!factor) return undefined;
      await this.mail.sendNewSignInMethodNotice(trx, user, { kind: 'totp', name: factor.name }, principal.client);
      const first = await this.recordAdded(trx, principal, factor.id, 'totp');
      if (!first) return { factor };
      await this.raiseToFirstFactor(trx, principal, 'otp');
      return { factor, recoveryCodes: await this.issueRecoveryCodes(trx, principal) };
    });
    if (!confirmed) {
      await this.transact((trx) =>
        recordEvent(trx, {
          type: 'mfa.failed',
          actor: user.id,
          subject: user.id,
          details: { method: 'totp', reason: 'wrong_code', factor_id: id },
          origin: principal.client,
        }),
      );
      throw new InvalidCode();
    }
    this.mail.flush();
    return confirmed;
  }

  /** Removes a factor; the last one takes the recovery codes with it. */
  async remove(principal: Principal, id: number): Promise<void> {
    const { user } = principal;
    await this.transact(async (trx) => {
      const removed = await deleteFactor(trx, user.id, id);
      if (!removed) throw new NotFound('Factor not found');
      const left = await countConfirmedFactors(trx, user.id);
      if (left === 0) await deleteRecoveryCodes(trx, user.id);
      await recordEvent(trx, {
        type: 'mfa.factor_removed',
        actor: user.id,
        subject: user.id,
        details: { factor_id: id, type: removed.type, factors_left: left },
        origin: principal.client,
      });
    });
  }

  /** A new set of recovery codes; the old set is void. Only for a user with a factor. */
  async regenerateRecoveryCodes(principal: Principal): Promise<string[]> {
    const codes = await this.transact(async (trx) => {
      if ((await countConfirmedFactors(trx, principal.user.id)) === 0)
        throw new Conflict('Recovery codes need a second factor; enrol one first');
      await this.mail.sendNewSignInMethodNotice(trx, principal.user, { kind: 'recovery_codes' }, principal.client);
      return this.issueRecoveryCodes(trx, principal);
    });
    this.mail.flush();
    return codes;
  }

  /** Creation options for a new passkey of the user; the challenge is kept for one registration. */
  async passkeyRegistrationOptions(principal: Principal) {
    const { user } = principal;
    const passkeys = await listConfirmedFactors(this.db, user.id, 'webauthn');
    const userHandle = (await findUserHandle(this.db, user.id)) ?? randomBytes(32).toString('base64url');
    const options = await this.webauthn.creationOptions({
      userHandle,
      userName: user.email,
      displayName: user.name,
      exclude: passkeys.map((p) => ({ id: p.credential_id!, transports: p.transports ?? undefined })),
    });
    await this.newChallenge({ purpose: 'passkey_registration', userId: user.id, challenge: options.challenge, userHandle });
    return options;
  }

  /** Checks the authenticator's answer to a registration challenge of this user and keeps the passkey. */
  async registerPasskey(principal: Principal, credential: PasskeyCredential, name: string | undefined): Promise<MfaFactorRow> {
    const { user } = principal;
    const challenge = this.webauthn.challengeOf(credential);
    // Spent before it is checked: a challenge is answered once, rightly or not.
    const issued =
      challenge && (await consumeChallenge(this.db, { purpose: 'passkey_registration', userId: user.id, challenge }, new Date(this.now())));
    const fail = async (reason: string, message?: string) => {
      await this.transact((trx) =>
        recordEvent(trx, {
          type: 'mfa.failed',
          actor: user.id,
          subject: user.id,
          details: { method: 'webauthn', reason, stage: 'registration' },
          origin: principal.client,
        }),
      );
      return new InvalidPasskey(message);
    };
    if (!issued) throw await fail('unknown_challenge', 'Unknown, used or expired challenge');
    const passkey = await this.webauthn.verifyRegistration(credential, issued.challenge!);
    if (!passkey) throw await fail('not_verified');
    const registered = await this.transact(async (trx) => {
      const factor = await insertFactor(trx, {
        user_id: user.id,
        type: 'webauthn',
        name: name?.trim() || 'Passkey',
        confirmed_at: new Date(),
        credential_id: passkey.credentialId,
        public_key: passkey.publicKey,
        sign_count: passkey.counter,
        transports: passkey.transports ?? null,
        user_handle: issued.user_handle,
      }).catch((error: unknown) => {
        if (isUniqueViolation(error)) throw new Conflict('This passkey is registered already');
        throw error;
      });
      await this.mail.sendNewSignInMethodNotice(trx, user, { kind: 'passkey', name: factor.name }, principal.client);
      const first = await this.recordAdded(trx, principal, factor.id, 'webauthn');
      if (first) await this.raiseToFirstFactor(trx, principal, 'hwk');
      return factor;
    });
    this.mail.flush();
    return registered;
  }

  /** An admin removes every factor and recovery code of a user, and voids their pending login steps. */
  async resetUser(principal: Principal, userId: number): Promise<void> {
    requireAdmin(principal);
    const target = await findUserById(this.db, userId);
    if (!target || target.deleted_at !== null) throw new NotFound('User not found');
    await this.transact(async (trx) => {
      const removed = await deleteUserFactors(trx, userId);
      await deleteRecoveryCodes(trx, userId);
      await voidUserChallenges(trx, userId);
      await recordEvent(trx, {
        type: 'mfa.reset',
        actor: principal.user.id,
        subject: userId,
        details: { factors_removed: removed },
        origin: principal.client,
      });
    });
  }

  /** Keeps a WebAuthn challenge for one answer within CHALLENGE_TTL_MS. */
  async newChallenge(c: {
    purpose: 'passkey_registration' | 'passkey_login';
    userId: number | null;
    challenge: string;
    userHandle?: string;
  }): Promise<string> {
    const id = randomUUID();
    const now = this.now();
    await insertChallenge(
      this.db,
      {
        id,
        purpose: c.purpose,
        userId: c.userId,
        challenge: c.challenge,
        userHandle: c.userHandle,
        expiresAt: new Date(now + CHALLENGE_TTL_MS),
      },
      new Date(now),
    );
    return id;
  }

  /** Every other session of the user ends; this one has now shown a second factor. */
  /** Records a confirmed factor; true when it is the user's first. */
  private async recordAdded(trx: UnitOfWork, principal: Principal, factorId: number, type: 'totp' | 'webauthn'): Promise<boolean> {
    const { user } = principal;
    const first = (await countConfirmedFactors(trx, user.id)) === 1;
    const details = { factor_id: factorId, type, first };
    await recordEvent(trx, { type: 'mfa.factor_added', actor: user.id, subject: user.id, details, origin: principal.client });
    return first;
  }

  private async raiseToFirstFactor(trx: UnitOfWork, principal: Principal, method: 'otp' | 'hwk'): Promise<void> {
    const sessionId = sessionOf(principal);
    const current = await findSessionAssurance(trx, sessionId);
    const amr = [...new Set([...(current?.amr ?? ['pwd']), method, 'mfa'])];
    await revokeUserSessions(trx, principal.user.id, sessionId);
    await raiseSessionAssurance(trx, sessionId, amr, 'aal2');
  }

  private async issueRecoveryCodes(trx: UnitOfWork, principal: Principal): Promise<string[]> {
    const codes = newRecoveryCodes();
    await replaceRecoveryCodes(trx, principal.user.id, codes.map(recoveryCodeHash));
    await recordEvent(trx, {
      type: 'mfa.recovery_codes_generated',
      actor: principal.user.id,
      subject: principal.user.id,
      details: { count: codes.length },
      origin: principal.client,
    });
    return codes;
  }
}
