import type { Operation } from 'openapi-backend';
import type { Principal } from '../principal.js';

/**
 * The contract's mark on the operations that add a way to sign in or to act as the user: they want
 * proof of presence, the body's `current_password` or a recent authentication of the session.
 */
export const REAUTHENTICATION = 'x-reauthentication';

/** The field of a marked operation's body that carries the password. */
const FIELD = 'current_password';

/** The rule that decides: resolves when the caller may go on, throws the refusal otherwise. */
export type RequirePresence = (principal: Principal, currentPassword: string | undefined) => Promise<void>;

/** What runs before a marked operation, once its request is validated; nothing for the others. */
export type PresenceCheck = (operationId: string, principal: Principal | undefined, body: unknown) => Promise<void>;

/**
 * Reads the marks once, so that the list of the operations that ask for proof is kept in the
 * contract and nowhere else. A mark the layer could not honour stops the start: one on an operation
 * that takes no token, or whose JSON body has no `current_password` to carry the proof.
 */
export function presenceFor(operations: Operation[], requirePresence: RequirePresence): PresenceCheck {
  const marked = new Set<string>();
  for (const operation of operations) {
    const id = operation.operationId!;
    const mark = (operation as unknown as Record<string, unknown>)[REAUTHENTICATION];
    if (mark === undefined) continue;
    if (mark !== true) throw new Error(`${id}: ${REAUTHENTICATION} must be true`);
    if ((operation.security ?? []).length === 0) throw new Error(`${id}: ${REAUTHENTICATION} on an operation that takes no token`);
    if (!bodyDeclares(operation, FIELD)) throw new Error(`${id}: ${REAUTHENTICATION} on an operation whose body has no ${FIELD}`);
    marked.add(id);
  }
  return async (operationId, principal, body) => {
    if (!marked.has(operationId) || principal === undefined) return;
    const password = body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[FIELD] : undefined;
    await requirePresence(principal, typeof password === 'string' ? password : undefined);
  };
}

function bodyDeclares(operation: Operation, field: string): boolean {
  const body = operation.requestBody;
  const schema = body && 'content' in body ? body.content['application/json']?.schema : undefined;
  return schema !== undefined && 'properties' in schema && Object.hasOwn(schema.properties ?? {}, field);
}
