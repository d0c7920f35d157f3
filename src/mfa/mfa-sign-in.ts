import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { countRecoveryCodes, findPasskey, listConfirmedFactors, recordPasskeyUse } from './factor-repository.js';
import {
  consumeChallenge,
  findLiveMfaChallenge,
  insertChallenge,
  recordMfaFailure,
  setMfaWebAuthnChallenge,
} from './challenge-repository.js';
import type { AuditDetails } from '../audit/audit-repository.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database, MfaChallengeRow, MfaFactorRow, UserRow } from '../db/types.js';
import { findUserById } from '../users/user-repository.js';
import { Forbidden, InvalidCode, InvalidCredentials, InvalidPasskey, Unauthorized, Validation } from '../errors.js';
import { recordEvent } from '../audit/audit-events.js';
import { emailNotVerified, notAMember, type OrganizationMembership, type SecondFactorGate } from '../sessions/auth.js';
import type { Clock, FactorService } from './factors.js';
import { countedCheck, type LoginGuard } from '../sessions/login-guard.js';
import type { ClientInfo } from '../principal.js';
import { spendRecoveryCode, takeTotpCode } from './second-factor-codes.js';
import { openSession, type TokenPair } from '../sessions/session-start.js';
import { refuseUnlessSso } from '../organizations/domain-policy.js';
import { sha256, type Assurance, type TokenService } from '../sessions/tokens.js';
import type { TotpCodes } from './totp.js';
import type { StoredPasskey, WebAuthnParty } from './webauthn.js';

/** How long the second step of a login may take. */
export const MFA_TOKEN_TTL_MS = 5 * 60 * 1000;
/** Wrong proofs that void an mfa_token. */
export const MFA_MAX_FAILURES = 5;

export type MfaMethod = 'totp' | 'recovery_code' | 'webauthn';

type Credential = { id: string; response: { clientDataJSON: string; userHandle?: string | null } } & Record<string, unknown>;

export interface MfaProof {
  mfa_token: string;
  method: MfaMethod;
  code?: string;
  credential?: Credential;
}

/** What a proof showed: the RFC 8176 value it adds, and the factor it used. */
interface Shown {
  amr: 'otp' | 'hwk';
  factorId?: number;
  details?: Record<string, unknown>;
}

const passkeyNotRecognised = () => new InvalidCredentials('Passkey not recognised');

/**
 * Signing in with a second factor: the `mfa_token` a password login of a user with a factor
 * gets, its verification with a TOTP code, a recovery code or a passkey, and the passwordless
 * sign-in with a discoverable passkey. Wrong proofs count as failed logins toward the lockout.
 * Spent and expired login steps are purged by housekeeping.
 */
export class MfaSignIn implements SecondFactorGate {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly tokens: TokenService,
    private readonly transact: Transact,
    private readonly totp: TotpCodes,
    private readonly webauthn: WebAuthnParty,
    private readonly factors: FactorService,
    private readonly options: {
      now: Clock;
      requireVerifiedEmail: boolean;
      loginGuard?: LoginGuard;
      organizations?: OrganizationMembership;
    },
  ) {}

  /**
   * For a user with a confirmed factor: a new mfa_token and the methods that can answer it. The step
   * keeps how the first one was taken (`firstAmr`, a password when absent) for the session's `amr`,
   * and the upstream `provider` of that first step, which the session it opens names.
   */
  async challenge(
    user: UserRow,
    client: ClientInfo,
    firstAmr?: readonly string[],
    provider?: string,
    organizationId?: number,
  ): Promise<{ mfaToken: string; methods: MfaMethod[] } | undefined> {
    const factors = await listConfirmedFactors(this.db, user.id);
    if (factors.length === 0) return undefined;
    const methods: MfaMethod[] = [];
    if (factors.some((f) => f.type === 'totp')) methods.push('totp');
    if (factors.some((f) => f.type === 'webauthn')) methods.push('webauthn');
    if ((await countRecoveryCodes(this.db, user.id)) > 0) methods.push('recovery_code');
    const mfaToken = randomBytes(32).toString('base64url');
    const now = this.options.now();
    await this.transact(async (trx) => {
      const expiresAt = new Date(now + MFA_TOKEN_TTL_MS);
      await insertChallenge(
        trx,
        { id: randomUUID(), purpose: 'mfa', userId: user.id, tokenHash: sha256(mfaToken), firstAmr, provider, organizationId, expiresAt },
        new Date(now),
      );
      const details: AuditDetails = provider ? { methods, provider } : { methods };
      await recordEvent(trx, { type: 'mfa.challenged', actor: null, subject: user.id, details, origin: client });
    });
    return { mfaToken, methods };
  }

  /** Request options listing the user's passkeys; the challenge answers this login step once. */
  async webauthnOptions(mfaToken: string) {
    const step = await this.liveStep(mfaToken);
    const passkeys = await listConfirmedFactors(this.db, step.user_id!, 'webauthn');
    const options = await this.webauthn.requestOptions({
      allow: passkeys.map((p) => ({ id: p.credential_id!, transports: p.transports ?? undefined })),
      userVerification: 'preferred',
    });
    if (!(await setMfaWebAuthnChallenge(this.db, step.id, options.challenge, new Date(this.options.now())))) throw new Unauthorized();
    return options;
  }

  /** Finishes a password login with a proof of the second factor; opens the session. */
  async verify(proof: MfaProof, client: ClientInfo): Promise<{ user: UserRow; tokens: TokenPair }> {
    if (proof.method !== 'webauthn' && proof.code === undefined)
      throw new Validation([{ field: 'body.code', message: `is required with method ${proof.method}` }]);
    if (proof.method === 'webauthn' && proof.credential === undefined)
      throw new Validation([{ field: 'body.credential', message: 'is required with method webauthn' }]);
    const step = await this.liveStep(proof.mfa_token);
    const user = await findUserById(this.db, step.user_id!);
    if (!user || user.deleted_at !== null || !user.is_active) throw new Unauthorized();
    // A login that named an organisation signs in for it, while its user is still a member.
    const organizationId = step.organization_id;
    if (organizationId !== null && !(await this.options.organizations?.claims(this.db, user.id, organizationId))) throw notAMember();

    let opened: { sessionId: string; tokens: TokenPair } | undefined;
    const { valid, locked } = await countedCheck(this.options.loginGuard, user.email, client.ip, async () => {
      opened = await this.transact(async (trx) => {
        const shown = await this.check(trx, step, user, proof, client);
        if (!shown) return undefined;
        // Spent with the proof: of two requests with one token, one signs in.
        if (!(await consumeChallenge(trx, { purpose: 'mfa', id: step.id }, new Date(this.options.now())))) throw new Unauthorized();
        const assurance: Assurance = { amr: [...new Set([...(step.first_amr ?? ['pwd']), shown.amr, 'mfa'])], aal: 'aal2' };
        const organization = organizationId === null ? undefined : await this.options.organizations?.claims(trx, user.id, organizationId);
        if (organizationId !== null && !organization) throw notAMember();
        const session = await openSession(trx, this.tokens, user, client, assurance, step.provider, organization);
        const details = { method: proof.method, factor_id: shown.factorId ?? null, ...shown.details };
        await recordEvent(trx, { type: 'mfa.verified', actor: user.id, subject: user.id, details, origin: client });
        await recordEvent(trx, {
          type: 'login.succeeded',
          actor: user.id,
          subject: user.id,
          details: {
            session_id: session.sessionId,
            amr: [...assurance.amr],
            ...(step.provider ? { provider: step.provider } : {}),
            ...(organization && { organization_id: organization.org_id }),
          },
          origin: client,
        });
        return session;
      });
      return opened !== undefined;
    });
    if (!valid || !opened) {
      await this.transact(async (trx) => {
        const failures = await recordMfaFailure(trx, step.id, MFA_MAX_FAILURES);
        await recordEvent(trx, {
          type: 'mfa.failed',
          actor: null,
          subject: user.id,
          details: { method: proof.method, reason: 'wrong_proof', failures },
          origin: client,
        });
        if (locked)
          await recordEvent(trx, { type: 'login.locked', actor: null, subject: user.id, details: { scope: locked }, origin: client });
      });
      throw proof.method === 'webauthn' ? new InvalidPasskey() : new InvalidCode();
    }
    await this.options.loginGuard?.signInCompleted(user.email, client.ip);
    return { user, tokens: opened.tokens };
  }

  /** Options for a discoverable passkey: no e-mail; user verification required. */
  async passkeyLoginOptions() {
    const options = await this.webauthn.requestOptions({ userVerification: 'required' });
    const challengeId = await this.factors.newChallenge({ purpose: 'passkey_login', userId: null, challenge: options.challenge });
    return { challengeId, options };
  }

  /** Signs in with a passkey alone; with user verification, that is two factors in one. */
  async passkeyLogin(challengeId: string, credential: Credential, client: ClientInfo): Promise<{ user: UserRow; tokens: TokenPair }> {
    const issued = await consumeChallenge(this.db, { purpose: 'passkey_login', id: challengeId }, new Date(this.options.now()));
    if (!issued) throw new Unauthorized();
    const passkey = await findPasskey(this.db, credential.id);
    const user = passkey && (await findUserById(this.db, passkey.user_id));
    const refuse = (subject: number | null, reason: string, locked?: string) =>
      this.transact(async (trx) => {
        await recordEvent(trx, { type: 'login.failed', actor: null, subject, details: { reason, method: 'passkey' }, origin: client });
        if (locked) await recordEvent(trx, { type: 'login.locked', actor: null, subject, details: { scope: locked }, origin: client });
      });
    // The handle the authenticator keeps with a discoverable credential must be the one it was made for.
    const handle = credential.response.userHandle;
    if (!passkey || !user || user.deleted_at !== null || (handle && passkey.user_handle && handle !== passkey.user_handle)) {
      await refuse(user?.id ?? null, 'passkey_rejected');
      throw passkeyNotRecognised();
    }
    const { valid, locked } = await countedCheck(this.options.loginGuard, user.email, client.ip, async () => {
      const checked = await this.webauthn.verifyAssertion(credential, issued.challenge!, storedPasskey(passkey), true);
      return checked !== undefined && (await recordPasskeyUse(this.db, passkey.id, Number(passkey.sign_count), checked.newCounter));
    });
    if (!valid) {
      await refuse(user.id, 'passkey_rejected', locked);
      throw passkeyNotRecognised();
    }
    if (!user.is_active) {
      await refuse(user.id, 'account_disabled');
      throw new Forbidden('Account is disabled');
    }
    if (this.options.requireVerifiedEmail && !user.email_verified) {
      await refuse(user.id, 'email_not_verified');
      throw emailNotVerified();
    }
    await refuseUnlessSso(this.db, user);
    const assurance: Assurance = { amr: ['hwk', 'mfa'], aal: 'aal2' };
    const { tokens } = await this.transact(async (trx) => {
      const session = await openSession(trx, this.tokens, user, client, assurance);
      const details = { session_id: session.sessionId, method: 'passkey', factor_id: passkey.id, amr: [...assurance.amr] };
      await recordEvent(trx, { type: 'login.succeeded', actor: user.id, subject: user.id, details, origin: client });
      return session;
    });
    await this.options.loginGuard?.signInCompleted(user.email, client.ip);
    return { user, tokens };
  }

  /** The live login step an mfa_token names; 401 for one unknown, expired, used or voided. */
  private async liveStep(mfaToken: string): Promise<MfaChallengeRow> {
    const step = await findLiveMfaChallenge(this.db, sha256(mfaToken), new Date(this.options.now()));
    if (!step || step.user_id === null) throw new Unauthorized();
    return step;
  }

  /** Checks one proof, taking what it spends (a TOTP step, a recovery code, a passkey's counter). */
  private async check(
    trx: UnitOfWork,
    step: MfaChallengeRow,
    user: UserRow,
    proof: MfaProof,
    client: ClientInfo,
  ): Promise<Shown | undefined> {
    if (proof.method === 'totp') {
      const factorId = await takeTotpCode(trx, this.totp, user.id, proof.code!, this.options.now());
      return factorId === undefined ? undefined : { amr: 'otp', factorId };
    }
    if (proof.method === 'recovery_code') {
      const remaining = await spendRecoveryCode(trx, user.id, proof.code!, client);
      return remaining === undefined ? undefined : { amr: 'otp', details: { recovery_codes_remaining: remaining } };
    }
    const credential = proof.credential!;
    const passkey = await findPasskey(trx, credential.id);
    if (!passkey || passkey.user_id !== user.id || step.challenge === null) return undefined;
    const checked = await this.webauthn.verifyAssertion(credential, step.challenge, storedPasskey(passkey), false);
    if (!checked || !(await recordPasskeyUse(trx, passkey.id, Number(passkey.sign_count), checked.newCounter))) return undefined;
    return { amr: 'hwk', factorId: passkey.id };
  }
}

function storedPasskey(row: MfaFactorRow): StoredPasskey {
  return {
    credentialId: row.credential_id!,
    publicKey: row.public_key!,
    counter: Number(row.sign_count),
    transports: row.transports ?? undefined,
  };
}
