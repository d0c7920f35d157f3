import type { Context } from 'koa';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config';
import type { OperationId } from '../handlers/types';
import type { LimiterFactory } from '../services/rate-limiter';
import { rateLimited } from './errors';

/** The operations that take credentials or tokens: the tighter per-IP budget. */
export const AUTH_OPERATIONS: ReadonlySet<OperationId> = new Set<OperationId>([
  'register',
  'login',
  'loginJson',
  'refreshToken',
  'forgotPassword',
  'resetPassword',
  'verifyEmail',
  'resendVerification',
]);

const WINDOW_SECONDS = 60;

/** Health checks are never limited nor counted (docs are served before the API routes). */
const UNLIMITED_PATH = /^\/health(\/|$)/;

/**
 * A per-IP budget per minute for the operation `ctx.state.operationId` names: AUTH_RATE_LIMIT_PER_MINUTE
 * on the operations in AUTH_OPERATIONS, RATE_LIMIT_PER_MINUTE on the others. Every counted response
 * carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds); an exhausted budget is
 * a 429 with Retry-After.
 */
export async function rateLimitGuard(config: Config, limiter: LimiterFactory): Promise<(ctx: Context) => Promise<void>> {
  const auth = await limiter({ keyPrefix: 'ip-auth', points: config.authRateLimitPerMinute, duration: WINDOW_SECONDS });
  const general = await limiter({ keyPrefix: 'ip', points: config.rateLimitPerMinute, duration: WINDOW_SECONDS });

  return async (ctx) => {
    if (UNLIMITED_PATH.test(ctx.path)) return;
    const budget = AUTH_OPERATIONS.has(ctx.state.operationId) ? auth : general;
    let state: RateLimiterRes;
    let limited = false;
    try {
      state = await budget.consume(ctx.ip || 'unknown');
    } catch (rejected) {
      if (!(rejected instanceof RateLimiterRes)) throw rejected;
      state = rejected;
      limited = true;
    }
    const headers = {
      'RateLimit-Limit': String(budget.points),
      'RateLimit-Remaining': String(limited ? 0 : state.remainingPoints),
      'RateLimit-Reset': String(Math.max(0, Math.ceil(state.msBeforeNext / 1000))),
    };
    ctx.set(headers);
    if (limited) throw rateLimited(state.msBeforeNext, 'Too many requests', headers);
  };
}
