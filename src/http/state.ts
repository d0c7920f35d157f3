import type { ParameterizedContext } from 'koa';
import type { OperationId } from '../handlers/types.js';
import type { ClientInfo, Principal } from '../principal.js';

/** What the middleware of one request leaves for the next: Koa types `ctx.state` as `any`. */
export interface RequestState {
  requestId?: string;
  /** Set once the contract layer has matched the operation. */
  operationId?: OperationId;
  /** The bearer token's check, shared by the operation's security schemes. */
  authentication?: Promise<Principal>;
  principal?: Principal;
  /** Where the request comes from, worked out once (see clientOf). */
  client?: ClientInfo;
}

export const stateOf = (ctx: ParameterizedContext<RequestState>): RequestState => ctx.state;
