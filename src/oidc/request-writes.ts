import type { Executor } from '../db/types.js';
import type { ProviderContext, ProviderMiddleware } from './library.js';
import { saveTokenRecords, upsertOidcRecord, type OidcRecord } from './record-repository.js';
import { recordKey } from './request-reads.js';

/**
 * The tokens the provider saves, and the code or refresh token it marks used, while it answers one
 * request at its token endpoint. A refresh reads its token and then writes three records, one round
 * trip and one commit each; here they are held until the answer is ready and then written together,
 * in one statement and one transaction, before a byte of the answer is sent: a client is never given
 * a token that is not stored. Every other write (revoking a grant, removing a token, any other model)
 * and any read of a held record writes what is held first, so the database sees the same writes in
 * the same order as without holding them.
 *
 * The code or refresh token is marked used only if it has not been meanwhile: of two requests
 * presenting the same refresh token at once, one gets tokens and the other `invalid_grant`, where
 * both would otherwise have been given a new pair.
 */
export class RequestWrites {
  private consumed: { model: string; id: string; key: string } | undefined;
  private readonly saved = new Map<string, OidcRecord>();

  constructor(
    private readonly db: Executor,
    /** The error a request is refused with when its code or refresh token was used meanwhile. */
    private readonly usedMeanwhile: () => Error,
  ) {}

  /** Whether a write of this record is held. */
  holds(model: string, id: string): boolean {
    const key = recordKey(model, id);
    return this.saved.has(key) || this.consumed?.key === key;
  }

  get empty(): boolean {
    return this.consumed === undefined && this.saved.size === 0;
  }

  /** Holds a token's save; a later save of the same record replaces it. */
  async save(record: OidcRecord): Promise<void> {
    const key = recordKey(record.model, record.id);
    if (this.consumed?.key === key) await this.write();
    this.saved.set(key, record);
  }

  /** Holds marking a record used; one at a time (the statement marks one). */
  async consume(model: string, id: string): Promise<void> {
    const key = recordKey(model, id);
    if (this.consumed !== undefined || this.saved.has(key)) await this.write();
    this.consumed = { model, id, key };
  }

  /** Writes what is held, in one statement; throws `usedMeanwhile()` when the record to mark used was used meanwhile. */
  async write(): Promise<void> {
    if (!(await this.writeHeld())) throw this.usedMeanwhile();
  }

  /** Writes what is held, in one statement; false when the record to mark used was used meanwhile (nothing is then saved). */
  async writeHeld(): Promise<boolean> {
    if (this.empty) return true;
    const consumed = this.consumed;
    const saved = [...this.saved.values()];
    this.consumed = undefined;
    this.saved.clear();
    // One token alone (the client credentials grant) is the plain save, without the arrays.
    if (consumed === undefined && saved.length === 1) {
      await upsertOidcRecord(this.db, saved[0]);
      return true;
    }
    return saveTokenRecords(this.db, consumed, saved);
  }
}

const writesByRequest = new WeakMap<object, RequestWrites>();

/** The held writes of the request whose context this is; undefined where writes are made at once. */
export function writesOf(ctx: ProviderContext | undefined): RequestWrites | undefined {
  return ctx ? writesByRequest.get(ctx) : undefined;
}

/**
 * The provider's middleware that holds the token endpoint's writes (see RequestWrites) and makes them
 * once the endpoint has answered. It must come first, so that it runs after every other once the
 * answer is made. When the writes fail the answer is replaced, with `invalid_grant` (the code or
 * refresh token was used meanwhile) or `server_error`, as the provider words them.
 */
export function heldTokenWrites(db: Executor, tokenPath: string, usedMeanwhile: () => Error): ProviderMiddleware {
  return async (ctx, next) => {
    if (ctx.method !== 'POST' || ctx.path !== tokenPath) return next();
    const writes = new RequestWrites(db, usedMeanwhile);
    writesByRequest.set(ctx, writes);
    try {
      await next();
    } finally {
      writesByRequest.delete(ctx);
    }
    const provider = ctx.app as unknown as { emit(event: string, ...args: unknown[]): boolean };
    try {
      if (await writes.writeHeld()) return;
      const refused = usedMeanwhile() as Error & { error_description?: string };
      ctx.status = 400;
      ctx.body = { error: refused.message, error_description: refused.error_description };
      provider.emit('grant.error', ctx, refused);
    } catch (error) {
      ctx.status = 500;
      ctx.body = { error: 'server_error', error_description: 'oops! something went wrong' };
      provider.emit('server_error', ctx, error);
    }
  };
}
