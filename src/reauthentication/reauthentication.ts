import type { Kysely } from 'kysely';
import type { SessionConfig } from '../config/index.js';
import {
  findSessionAssurance,
  findSessionAuthenticatedAt,
  findSessionOrganization,
  renewSessionAuthentication,
} from '../sessions/session-repository.js';
import type { OrganizationMembership } from '../sessions/auth.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import { InvalidCode, ReauthRequired, Unauthorized } from '../errors.js';
import { recordEvent } from '../audit/audit-events.js';
import type { CurrentPassword } from '../passwords/current-password.js';
import { countedCheck, type LoginGuard } from '../sessions/login-guard.js';
import { sessionOf, type Principal } from '../principal.js';
import { spendRecoveryCode, takeTotpCode } from '../mfa/second-factor-codes.js';
import type { Assurance, TokenService } from '../sessions/tokens.js';
import type { TotpCodes } from '../mfa/totp.js';

/** What renews a session's authentication: the password, or a code of a TOTP app or a recovery code. */
export type ReauthenticationProof = { password: string; code?: undefined } | { code: string; password?: undefined };

type Method = 'password' | 'totp' | 'recovery_code';

/** What the clock of these rules reads: milliseconds since the epoch. */
type Clock = () => number;

/** A TOTP app shows six digits; a recovery code is sixteen base32 characters, so never that. */
const TOTP_CODE = /^\d{6}$/;

/**
 * Proof of presence before a new way in. An access token is stolen more easily than a password: on
 * its own it must not be enough to link an identity, register a passkey, enrol a TOTP app, make new
 * recovery codes or an API key, each of which would outlive the token. Those ask for the password
 * with the request, or for a session whose holder proved who they are within REAUTH_MAX_AGE_MINUTES;
 * a re-authentication renews that proof. Both count wrong answers like failed logins.
 */
export class Reauthentication {
  private readonly maxAgeMs: number;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    private readonly tokens: TokenService,
    private readonly currentPassword: CurrentPassword,
    private readonly totp: TotpCodes,
    config: Pick<SessionConfig, 'reauthMaxAgeMinutes'>,
    private readonly options: { now: Clock; loginGuard?: LoginGuard; organizations?: OrganizationMembership },
  ) {
    this.maxAgeMs = config.reauthMaxAgeMinutes * 60_000;
  }

  /**
   * Resolves when the caller may add a way in: `currentPassword` is theirs (400 INVALID_PASSWORD, or
   * 429 once locked, otherwise), or, without one, both the session and the access token say the last
   * authentication is recent (403 REAUTH_REQUIRED otherwise). The token's word counts because a token
   * issued before a re-authentication must not ride on it: that is the token a thief would hold.
   */
  async requirePresence(principal: Principal, currentPassword: string | undefined): Promise<void> {
    const sessionId = sessionOf(principal);
    if (currentPassword !== undefined) return this.currentPassword.confirm(principal.user, currentPassword, principal.client);
    const sessionAuthenticatedAt = await findSessionAuthenticatedAt(this.db, sessionId);
    if (sessionAuthenticatedAt === undefined) throw new Unauthorized();
    const tokenAuthenticatedAt = principal.apiKey ? 0 : principal.authenticatedAt.getTime();
    const last = Math.min(sessionAuthenticatedAt.getTime(), tokenAuthenticatedAt);
    if (Date.now() - last >= this.maxAgeMs) throw new ReauthRequired();
  }

  /** Checks the proof and renews the session's authentication: a new access token that says so. */
  async reauthenticate(principal: Principal, proof: ReauthenticationProof): Promise<{ accessToken: string; expiresInSeconds: number }> {
    const sessionId = sessionOf(principal);
    const { user, client } = principal;
    const at = new Date();
    let assurance: Assurance | undefined;
    if (proof.password !== undefined) {
      await this.currentPassword.confirm(user, proof.password, client);
      assurance = await this.transact((trx) => this.renew(trx, principal, at, 'password'));
    } else {
      const code = proof.code;
      const method: Method = TOTP_CODE.test(code) ? 'totp' : 'recovery_code';
      // Taken (a TOTP step, a recovery code) in the transaction that renews, so that a code is spent only by a success.
      const { valid, locked } = await countedCheck(this.options.loginGuard, user.email, client.ip, async () => {
        assurance = await this.transact(async (trx) => {
          const shown =
            method === 'totp'
              ? await takeTotpCode(trx, this.totp, user.id, code, this.options.now())
              : await spendRecoveryCode(trx, user.id, code, client);
          return shown === undefined ? undefined : this.renew(trx, principal, at, method);
        });
        return assurance !== undefined;
      });
      if (!valid || !assurance) {
        await this.transact(async (trx) => {
          const details = { method, reason: 'wrong_code', stage: 'reauthentication' };
          await recordEvent(trx, { type: 'mfa.failed', actor: user.id, subject: user.id, details, origin: client });
          if (locked)
            await recordEvent(trx, { type: 'login.locked', actor: null, subject: user.id, details: { scope: locked }, origin: client });
        });
        throw new InvalidCode();
      }
    }
    await this.options.loginGuard?.signInCompleted(user.email, client.ip);
    // The new token acts for the organisation the session acts for, while its user is a member of it.
    const organizationId = await findSessionOrganization(this.db, sessionId);
    const organization = organizationId === null ? undefined : await this.options.organizations?.claims(this.db, user.id, organizationId);
    return {
      accessToken: this.tokens.issueAccess(user, sessionId, at, assurance, organization),
      expiresInSeconds: this.tokens.accessTtlSeconds,
    };
  }

  /** Records the proof on the live session; how the session was signed in stays as it was. */
  private async renew(trx: UnitOfWork, principal: Principal, at: Date, method: Method): Promise<Assurance> {
    const sessionId = sessionOf(principal);
    const { user, client } = principal;
    if (!(await renewSessionAuthentication(trx, sessionId, at))) throw new Unauthorized();
    await recordEvent(trx, {
      type: 'session.reauthenticated',
      actor: user.id,
      subject: user.id,
      details: { session_id: sessionId, method },
      origin: client,
    });
    const assurance = await findSessionAssurance(trx, sessionId);
    if (!assurance) throw new Unauthorized();
    return assurance;
  }
}
