import { normalizeEmail } from '../email-address.js';
import { createHmac } from 'node:crypto';
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import type { LimitsConfig } from '../config/index.js';
import { RateLimited } from '../errors.js';
import { clientKey } from '../infra/client-address.js';
import type { LimiterFactory } from '../infra/rate-limiter.js';

/** The window of the account-wide count, and how long an account-wide lock lasts. */
export const ACCOUNT_WINDOW_SECONDS = 3600;

/** The refusal of a locked sign-in, naming which lock holds: this client's on the account, or the whole account's. */
const lockedMessage = (scope: LockScope, lockoutMinutes: number) =>
  scope === 'client'
    ? `Too many failed sign-ins to this account from this client: locked out for ${lockoutMinutes} minutes (LOGIN_MAX_FAILURES, LOGIN_LOCKOUT_MINUTES)`
    : 'Too many failed sign-ins to this account from any client: the account is locked for an hour (LOGIN_ACCOUNT_MAX_FAILURES); a password reset lifts it';

/** Which lock a failure started: the one client's, or the whole account's. */
export type LockScope = 'client' | 'account';

/**
 * Failed sign-ins, counted per account and client (an IPv6 client by its /64): after
 * `LOGIN_MAX_FAILURES` within `LOGIN_LOCKOUT_MINUTES` that client is locked out of that account
 * for `LOGIN_LOCKOUT_MINUTES`, and nobody else is. Past `LOGIN_ACCOUNT_MAX_FAILURES` within an
 * hour, from any clients, the account is locked for everyone for an hour, or until a password
 * reset. A client's count starts again only when a sign-in completes (tokens are issued): a right
 * password whose second factor is still to come clears nothing, so re-entering it between guessed
 * codes gains no guesses. Keys are keyed digests of the normalized e-mail, whether or not an account has it, so
 * the store holds no e-mail and a lockout says nothing about which e-mails exist.
 *
 * Each attempt takes its point before the password is checked and gives it back when the check
 * succeeds or never ran, so parallel guesses can never have more checks than the limit.
 */
export class LoginGuard {
  private constructor(
    private readonly clientFailures: RateLimiterAbstract,
    private readonly accountFailures: RateLimiterAbstract,
    private readonly locks: RateLimiterAbstract,
    private readonly secret: string,
    private readonly lockoutSeconds: number,
  ) {}

  /** `secret` (SECRET_KEY) keys the digests the counters are stored under. */
  static async create(config: LimitsConfig, secret: string, limiter: LimiterFactory): Promise<LoginGuard> {
    const lockoutSeconds = config.loginLockoutMinutes * 60;
    const [clientFailures, accountFailures, locks] = await Promise.all([
      limiter({ keyPrefix: 'login-client-failures', points: config.loginMaxFailures, duration: lockoutSeconds }),
      limiter({ keyPrefix: 'login-account-failures', points: config.loginAccountMaxFailures, duration: ACCOUNT_WINDOW_SECONDS }),
      // Only ever blocked (with the lock's own duration) and read.
      limiter({ keyPrefix: 'login-locks', points: 1, duration: lockoutSeconds }),
    ]);
    return new LoginGuard(clientFailures, accountFailures, locks, secret, lockoutSeconds);
  }

  /**
   * Takes one attempt at `email` from `ip`, atomically, before any password is checked: 429 while
   * either lock holds, or when attempts in flight already hold every point left. The account's point
   * is taken only once the client's was, so a client refused its own attempts spends none of the
   * account's budget.
   */
  async begin(email: string, ip: string | null): Promise<LoginAttempt> {
    const account = this.digest(normalizeEmail(email));
    const pair = this.digest(`${account}\n${clientKey(ip)}`);
    const [clientLock, accountLock, client] = await Promise.all([
      this.locks.get(`c:${pair}`),
      this.locks.get(`a:${account}`),
      this.clientFailures.penalty(pair),
    ]);
    const refused = [clientLock, accountLock].filter(isLocked);
    if (client.consumedPoints > this.clientFailures.points) refused.push(client);
    if (refused.length > 0) {
      // A point taken over the limit is given back at once, so it never outlives this answer.
      await this.clientFailures.reward(pair);
      throw this.locked(refused, isLocked(accountLock) ? 'account' : 'client');
    }
    const whole = await this.accountFailures.penalty(account);
    if (whole.consumedPoints > this.accountFailures.points) {
      await Promise.all([this.clientFailures.reward(pair), this.accountFailures.reward(account)]);
      throw this.locked([whole], 'account');
    }
    return new LoginAttempt(this, pair, account, client.consumedPoints, whole.consumedPoints);
  }

  /**
   * After a sign-in that issued tokens (a password without a second factor, a second factor, a
   * passkey): the client's count starts again; the account's keeps every other client's failures.
   */
  async signInCompleted(email: string, ip: string | null): Promise<void> {
    const account = this.digest(normalizeEmail(email));
    await this.clientFailures.delete(this.digest(`${account}\n${clientKey(ip)}`));
  }

  /** After a completed password reset: the account-wide count and lock, and the resetting client's. */
  async clear(email: string, ip: string | null): Promise<void> {
    const account = this.digest(normalizeEmail(email));
    const pair = this.digest(`${account}\n${clientKey(ip)}`);
    await Promise.all([
      this.accountFailures.delete(account),
      this.locks.delete(`a:${account}`),
      this.clientFailures.delete(pair),
      this.locks.delete(`c:${pair}`),
    ]);
  }

  /** @internal Settles an attempt; see LoginAttempt. */
  async settle(
    attempt: { pair: string; account: string; clientPoint: number; accountPoint: number },
    outcome: 'succeeded' | 'failed' | 'abandoned',
  ): Promise<LockScope | undefined> {
    const { pair, account } = attempt;
    if (outcome !== 'failed') {
      // Right credentials clear nothing yet: only a completed sign-in does (signInCompleted).
      await Promise.all([this.clientFailures.reward(pair), this.accountFailures.reward(account)]);
      return undefined;
    }
    // The failure that took the last point locks, unless a point given back since leaves room.
    let scope: LockScope | undefined;
    if (attempt.accountPoint >= this.accountFailures.points && (await this.reached(this.accountFailures, account))) {
      await this.locks.block(`a:${account}`, ACCOUNT_WINDOW_SECONDS);
      scope = 'account';
    }
    if (attempt.clientPoint >= this.clientFailures.points && (await this.reached(this.clientFailures, pair))) {
      await this.locks.block(`c:${pair}`, this.lockoutSeconds);
      scope ??= 'client';
    }
    return scope;
  }

  private locked(states: RateLimiterRes[], scope: LockScope): RateLimited {
    return new RateLimited(Math.max(...states.map((state) => state.msBeforeNext)), {
      message: lockedMessage(scope, this.lockoutSeconds / 60),
    });
  }

  private async reached(counter: RateLimiterAbstract, key: string): Promise<boolean> {
    const state = await counter.get(key);
    return state !== null && state.consumedPoints >= counter.points;
  }

  /** An HMAC under the service's secret: the store's keys cannot be tested against guessed e-mails. */
  private digest(value: string): string {
    return createHmac('sha256', this.secret).update(`login-guard\n${value}`).digest('base64url');
  }
}

/** One counted attempt: exactly one of its three outcomes must follow `begin`. */
export class LoginAttempt {
  private settled = false;

  constructor(
    private readonly guard: LoginGuard,
    readonly pair: string,
    readonly account: string,
    readonly clientPoint: number,
    readonly accountPoint: number,
  ) {}

  /** Right credentials: the point is given back; the count stays until the sign-in completes. */
  succeeded(): Promise<void> {
    return this.finish('succeeded').then(() => undefined);
  }

  /** Wrong credentials: the point stays; says which lock this failure started, if any. */
  failed(): Promise<LockScope | undefined> {
    return this.finish('failed');
  }

  /** No credentials were checked (the hash queue was full, say): the point is given back. */
  abandoned(): Promise<void> {
    return this.finish('abandoned').then(() => undefined);
  }

  private async finish(outcome: 'succeeded' | 'failed' | 'abandoned'): Promise<LockScope | undefined> {
    if (this.settled) return undefined;
    this.settled = true;
    return this.guard.settle(this, outcome);
  }
}

/**
 * Runs `check` (true for the right credentials) as one counted attempt at `email` from `ip`:
 * the attempt is taken first, and given back if the check throws. Without a guard (rate limits
 * off) it only runs the check. `locked` names the lock a failure started.
 */
export async function countedCheck(
  guard: LoginGuard | undefined,
  email: string,
  ip: string | null,
  check: () => Promise<boolean>,
): Promise<{ valid: boolean; locked?: LockScope }> {
  if (!guard) return { valid: await check() };
  const attempt = await guard.begin(email, ip);
  let valid: boolean;
  try {
    valid = await check();
  } catch (error) {
    await attempt.abandoned();
    throw error;
  }
  if (valid) {
    await attempt.succeeded();
    return { valid };
  }
  return { valid, locked: await attempt.failed() };
}

function isLocked(state: RateLimiterRes | null): state is RateLimiterRes {
  return state !== null && state.consumedPoints > 1 && state.msBeforeNext !== 0;
}
