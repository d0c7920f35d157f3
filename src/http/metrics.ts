import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import type { Metrics } from '../infra/metrics.js';
import { bearerToken } from './bearer.js';
import { ApiError, serviceUnavailable, unauthorized } from './errors.js';
import { stateOf } from './state.js';

/** Outside the contract: not an API operation, never rate limited. */
export const METRICS_PATH = '/metrics';

/** Times every request but the scrapes themselves, by operationId, method and final status. */
export function requestMetrics(metrics: Metrics): Middleware {
  return async (ctx: Context, next: Next) => {
    if (ctx.path === METRICS_PATH) {
      await next();
      return;
    }
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      // The operationId or a fixed label, never the path: paths carry ids and are whatever a client sends.
      metrics.observeRequest(stateOf(ctx).operationId, ctx.method, ctx.status, Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
}

/**
 * GET /metrics in the Prometheus text format. With a token, only `Authorization: Bearer <token>`
 * is served; anything else is the usual 401.
 */
export function metricsEndpoint(metrics: Metrics, token: string | undefined): Middleware {
  const expected = token === undefined ? undefined : digest(token);
  return async (ctx: Context, next: Next) => {
    if (ctx.path !== METRICS_PATH) {
      await next();
      return;
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw new ApiError(405, 'METHOD_NOT_ALLOWED', `Method ${ctx.method} not allowed on ${ctx.path}`, undefined, {
        headers: { Allow: 'GET, HEAD' },
      });
    }
    if (expected && !bearerMatches(ctx.get('authorization'), expected)) throw unauthorized();
    let text: string;
    try {
      text = await metrics.render();
    } catch (error) {
      // Under node:cluster, a worker that did not answer the primary in time.
      throw serviceUnavailable(error);
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.contentType;
    ctx.body = text;
  };
}

/** Compares digests, which have one length whatever was sent, in constant time. */
function bearerMatches(header: string, expected: Buffer): boolean {
  const token = bearerToken(header);
  return token !== undefined && timingSafeEqual(digest(token), expected);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
