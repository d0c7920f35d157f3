import type { UserRow } from '../db/types.js';

/**
 * What the provider has read while answering one request, kept for the rest of it: records by model
 * and id, provider sessions by uid, and people by id. The provider asks for a token's grant, its
 * provider session and its person one after another, and several times over; the adapter reads them
 * together with the token, in one round trip, and the later asks are answered from here. Kept per
 * request (keyed by the provider's context for it) and never longer: tokens, grants and sessions are
 * read from the database by every request, so a revocation reaches every process at once.
 */
export interface RequestReads {
  records: Map<string, Promise<KeptRecord | undefined>>;
  sessionsByUid: Map<string, Promise<KeptRecord | undefined>>;
  users: Map<number, Promise<UserRow | undefined>>;
}

export interface KeptRecord {
  payload: Record<string, unknown>;
  consumed_at: Date | null;
}

const readsByRequest = new WeakMap<object, RequestReads>();

/** The reads of the request whose context this is; undefined outside a request (nothing is kept). */
export function readsOf(ctx: object | undefined): RequestReads | undefined {
  if (!ctx) return undefined;
  let reads = readsByRequest.get(ctx);
  if (!reads) {
    reads = { records: new Map(), sessionsByUid: new Map(), users: new Map() };
    readsByRequest.set(ctx, reads);
  }
  return reads;
}

export const recordKey = (model: string, id: string): string => `${model}\0${id}`;
