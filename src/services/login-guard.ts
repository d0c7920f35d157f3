import { createHash } from 'node:crypto';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config';
import { rateLimited } from '../http/errors';
import type { LimiterFactory } from './rate-limiter';

/**
 * Locks an account's logins after `LOGIN_MAX_FAILURES` wrong credentials within
 * `LOGIN_LOCKOUT_MINUTES`, for `LOGIN_LOCKOUT_MINUTES`. The key is the normalized e-mail whether or
 * not an account has it, so a lockout says nothing about which e-mails exist.
 */
export class LoginGuard {
  private constructor(
    private readonly failures: RateLimiterAbstract,
    private readonly maxFailures: number,
    private readonly lockoutSeconds: number,
  ) {}

  static async create(config: Config, limiter: LimiterFactory): Promise<LoginGuard> {
    const lockoutSeconds = config.loginLockoutMinutes * 60;
    const failures = await limiter({ keyPrefix: 'login-failures', points: config.loginMaxFailures, duration: lockoutSeconds });
    return new LoginGuard(failures, config.loginMaxFailures, lockoutSeconds);
  }

  /** Throws 429 while the e-mail is locked; cheap, so it runs before any password hashing. */
  async check(email: string): Promise<void> {
    const state = await this.failures.get(keyOf(email));
    if (state && state.consumedPoints >= this.maxFailures && state.msBeforeNext > 0) {
      throw rateLimited(state.msBeforeNext, 'Too many failed login attempts; try again later');
    }
  }

  /**
   * Counts a wrong e-mail or password; the failure that reaches the limit starts the lockout. True
   * for that one failure only (the count is atomic, so of racing failures just one sees the limit).
   */
  async failed(email: string): Promise<boolean> {
    const key = keyOf(email);
    const counted = await this.failures.penalty(key);
    if (counted.consumedPoints >= this.maxFailures) await this.failures.block(key, this.lockoutSeconds);
    return counted.consumedPoints === this.maxFailures;
  }

  /** Valid credentials clear the count. */
  async succeeded(email: string): Promise<void> {
    await this.failures.delete(keyOf(email));
  }
}

/** E-mails are never stored in the counters, only their digest. */
function keyOf(email: string): string {
  return createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');
}
