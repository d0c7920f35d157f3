import type { Context } from 'koa';
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { LimitsConfig } from '../config/index.js';
import type { OperationId } from '../handlers/types.js';
import { clientKey } from '../infra/client-address.js';
import type { LimiterFactory } from '../infra/rate-limiter.js';
import { rateLimited } from './errors.js';
import { stateOf } from './state.js';

/** The operations that take credentials or tokens, or hash a password: the tighter per-IP budget. */
export const AUTH_OPERATIONS: ReadonlySet<OperationId> = new Set<OperationId>([
  'register',
  'login',
  'loginJson',
  'refreshToken',
  'changePassword',
  'reauthenticate',
  'forgotPassword',
  'resetPassword',
  'verifyEmail',
  'resendVerification',
  'createUser',
  'verifyMfa',
  'confirmTotp',
  'passkeyLogin',
  'requestEmailCode',
  'verifyEmailCode',
  'verifyProviderEmail',
  // The OpenID Connect provider's endpoints that take client secrets, codes or tokens, or register a client.
  'oauth2Authorize',
  'oauth2Token',
  'oauth2Introspect',
  'oauth2Revoke',
  'oauth2Register',
  // The device authorization grant: a device's request, and the page where people type its user code.
  'oauth2DeviceAuthorization',
  'oauth2DeviceVerification',
]);

/**
 * Operations that hash a password only when their body carries one: on the tighter budget then too.
 * `current_password` is the proof of presence of the operations marked `x-reauthentication`.
 */
const PASSWORD_FIELD_OPERATIONS: ReadonlyMap<OperationId, string> = new Map<OperationId, string>([
  ['updateUser', 'password'],
  ['createApiKey', 'current_password'],
  ['enrolTotp', 'current_password'],
  ['passkeyRegistrationOptions', 'current_password'],
  ['regenerateRecoveryCodes', 'current_password'],
  ['linkIdentity', 'current_password'],
]);

const WINDOW_SECONDS = 60;

/** Health checks are never limited nor counted (docs are served before the API routes). */
const UNLIMITED_PATH = /^\/health(\/|$)/;

/** The limits of requests: `guard` counts a request as its operation, `bodyGuard` the bodies that set passwords. */
export interface RateLimits {
  guard: (ctx: Context) => Promise<void>;
  bodyGuard: (ctx: Context) => Promise<void>;
}

/**
 * A per-IP budget per minute for the operation `ctx.state.operationId` names: AUTH_RATE_LIMIT_PER_MINUTE
 * on the operations in AUTH_OPERATIONS, RATE_LIMIT_PER_MINUTE on the others. Every counted response
 * carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds); an exhausted budget is
 * a 429 with Retry-After. `guard` runs before the body is read; `bodyGuard` after, for the operations
 * whose cost depends on it (an update that sets a password).
 */
export async function rateLimitGuard(config: LimitsConfig, limiter: LimiterFactory): Promise<RateLimits> {
  const auth = await limiter({ keyPrefix: 'ip-auth', points: config.authRateLimitPerMinute, duration: WINDOW_SECONDS });
  const general = await limiter({ keyPrefix: 'ip', points: config.rateLimitPerMinute, duration: WINDOW_SECONDS });

  // Each refusal names the budget that ran out, so that a client (or whoever runs the service) knows which limit to respect or raise.
  const refusals = new Map<RateLimiterAbstract, string>([
    [
      auth,
      `Too many requests: this client has used its ${auth.points} sign-in and credential requests a minute (AUTH_RATE_LIMIT_PER_MINUTE)`,
    ],
    [general, `Too many requests: this client has used its ${general.points} requests a minute (RATE_LIMIT_PER_MINUTE)`],
  ]);
  const spend = async (ctx: Context, budget: RateLimiterAbstract) => {
    let state: RateLimiterRes;
    let limited = false;
    try {
      // An IPv6 client is counted by its /64, which is what one subscriber gets.
      state = await budget.consume(clientKey(ctx.ip));
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
    if (limited) throw rateLimited(state.msBeforeNext, refusals.get(budget), headers);
  };

  return {
    guard: async (ctx) => {
      if (UNLIMITED_PATH.test(ctx.path)) return;
      await spend(ctx, AUTH_OPERATIONS.has(stateOf(ctx).operationId!) ? auth : general);
    },
    // A request that sets a password through an operation of the general budget spends the credential one too.
    bodyGuard: async (ctx) => {
      const field = PASSWORD_FIELD_OPERATIONS.get(stateOf(ctx).operationId!);
      const body = (ctx.request as { body?: unknown }).body;
      if (field !== undefined && body !== null && typeof body === 'object' && field in body) await spend(ctx, auth);
    },
  };
}
