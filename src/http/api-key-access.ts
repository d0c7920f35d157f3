import type { Context as KoaContext } from 'koa';
import type { Operation } from 'openapi-backend';
import { requireKeyMay, type Principal } from '../principal.js';
import { stateOf } from './state.js';

/**
 * The contract's mark on the operations that manage credentials, which API keys may not call:
 * `true` for the whole operation, or the list of body fields that make a request one (the e-mail
 * and password of `PUT /api/users/{id}`).
 */
export const CREDENTIAL_MANAGEMENT = 'x-credential-management';

type Mark = true | readonly string[];

/** What a key's principal may do here: every check reads the marks the contract had at start-up. */
export type KeyAccess = (ctx: KoaContext, principal: Principal) => void;

/**
 * Reads the marks once, so that the list of what API keys may not do is kept in the contract and
 * nowhere else; a mark the layer could not honour (on an operation without a security requirement,
 * or of another shape) stops the start.
 */
export function keyAccessFor(operations: Operation[]): KeyAccess {
  const marks = new Map<string, Mark>();
  const readOnly = new Set<string>();
  for (const operation of operations) {
    const id = operation.operationId!;
    if (operation.method.toLowerCase() === 'get') readOnly.add(id);
    const mark = (operation as unknown as Record<string, unknown>)[CREDENTIAL_MANAGEMENT];
    if (mark === undefined) continue;
    const valid = mark === true || (Array.isArray(mark) && mark.length > 0 && mark.every((field) => typeof field === 'string'));
    if (!valid) throw new Error(`${id}: ${CREDENTIAL_MANAGEMENT} must be true or a list of body fields`);
    if ((operation.security ?? []).length === 0) throw new Error(`${id}: ${CREDENTIAL_MANAGEMENT} on an operation that takes no token`);
    marks.set(id, mark);
  }
  return (ctx, principal) => {
    if (!principal.apiKey && !principal.impersonator) return;
    const id = stateOf(ctx).operationId!;
    const mark = marks.get(id);
    requireKeyMay(principal, { managesCredentials: mark !== undefined && carries(ctx, mark), readsOnly: readOnly.has(id) });
  };
}

function carries(ctx: KoaContext, mark: Mark): boolean {
  if (mark === true) return true;
  const body = (ctx.request as { body?: unknown }).body;
  return body !== null && typeof body === 'object' && mark.some((field) => Object.hasOwn(body, field));
}
