import type Koa from 'koa';
import { RateLimited } from '../errors.js';
import type { OperationId } from '../handlers/types.js';
import { providerOperation, type ErrorPage } from '../oidc/provider.js';
import { stateOf } from './state.js';

/** The provider's operations a person's browser opens: a refusal is a page, not JSON. */
const BROWSER_OPERATIONS: ReadonlySet<OperationId> = new Set<OperationId>([
  'oauth2Authorize',
  'oauth2EndSession',
  'oauth2DeviceVerification',
]);

/** The error an exhausted budget is answered with: OAuth's registered code for a server that cannot take the request now. */
const RATE_LIMITED_ERROR = 'temporarily_unavailable';

/**
 * The per-address rate limit of the API in front of the provider's endpoints, as the provider's
 * `admit` option: each request counts as the operation of the contract its path belongs to.
 */
export function providerAdmission(guard: (ctx: Koa.Context) => Promise<void>) {
  return (ctx: Koa.Context, errorPage: ErrorPage): Promise<boolean> => withinLimit(ctx, providerOperation(ctx.path), guard, errorPage);
}

/**
 * The per-address rate limit of the API in front of the provider's endpoints: the request counts as
 * `operationId` (the auth budget for those in AUTH_OPERATIONS), and a refusal is answered in OAuth's
 * shape, `{"error", "error_description"}` with Retry-After, or as the error page for a browser's
 * request. False when the request was refused and answered.
 */
export async function withinLimit(
  ctx: Koa.Context,
  operationId: OperationId | undefined,
  guard: (ctx: Koa.Context) => Promise<void>,
  errorPage: ErrorPage,
): Promise<boolean> {
  // CORS preflights carry no credentials and are not counted, as the API's are not.
  if (ctx.method === 'OPTIONS') return true;
  stateOf(ctx).operationId = operationId;
  try {
    await guard(ctx);
    return true;
  } catch (error) {
    if (!(error instanceof RateLimited)) throw error;
    const out = { error: RATE_LIMITED_ERROR, error_description: `${error.message}; try again in a minute` };
    ctx.set({ ...error.limits, 'Retry-After': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))), 'Cache-Control': 'no-store' });
    ctx.status = 429;
    if (operationId !== undefined && BROWSER_OPERATIONS.has(operationId)) await errorPage(ctx, out, error);
    else ctx.body = out;
    return false;
  }
}
