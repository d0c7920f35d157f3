import type { Context, Next } from 'koa';
import type { OperationId } from '../handlers/types';

/**
 * Cache-Control on the successful answers of the named operations. Handlers reply with a status and
 * a body only, so the few answers that may be cached are listed in one place, by operationId.
 */
export function cacheControl(policies: Partial<Record<OperationId, string>>) {
  return async (ctx: Context, next: Next): Promise<void> => {
    await next();
    const policy = policies[ctx.state.operationId as OperationId];
    if (policy !== undefined && ctx.status === 200) ctx.set('Cache-Control', policy);
  };
}
