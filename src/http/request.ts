import type { Context as KoaContext } from 'koa';
import type { OperationRequest } from '../handlers/types.js';
import type { ClientInfo } from '../principal.js';
import { stateOf } from './state.js';

/** User agents are kept up to this length on sessions and audit events. */
const MAX_USER_AGENT_LENGTH = 512;

/** Where the request comes from, for the sessions it opens and the audit events it causes. */
export function clientOf(ctx: KoaContext): ClientInfo {
  const state = stateOf(ctx);
  state.client ??= {
    ip: ctx.ip || null,
    userAgent: ctx.get('user-agent').slice(0, MAX_USER_AGENT_LENGTH) || null,
    requestId: state.requestId ?? null,
    origin: `${ctx.protocol}://${ctx.host}`,
  };
  return state.client;
}

/** What an operation is handed: its validated parts, the caller once authenticated, and the client. */
export function operationRequest(ctx: KoaContext, parts: Pick<OperationRequest, 'body' | 'query' | 'path'>): OperationRequest {
  return { ...parts, principal: stateOf(ctx).principal, client: clientOf(ctx) };
}
