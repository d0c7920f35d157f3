import type { Kysely } from 'kysely';
import type { OauthClientCache } from './client-cache.js';
import { upsertRegisteredClient, deleteOauthClient } from './client-repository.js';
import {
  consumeOidcRecord,
  deleteOidcRecordsOfGrant,
  deleteOidcRecord,
  findOidcRecord,
  findOidcRecordByUid,
  findOidcRecordByUserCode,
  findLiveProviderSession,
  findServiceSessionOfRecord,
  findTokenRecordsWithRelated,
  followProviderSession,
  ANY_TOKEN,
  TOKEN_MODELS,
  upsertOidcRecord,
} from './record-repository.js';
import { revokeSession } from '../sessions/session-repository.js';
import type { Database } from '../db/types.js';
import { UnreadableSecret } from '../errors.js';
import { seal, unseal } from '../infra/sealed.js';
import type { ProviderContext } from './library.js';
import { SELF_REGISTERED } from './registration.js';
import { readsOf, recordKey, type KeptRecord, type RequestReads } from './request-reads.js';
import { writesOf } from './request-writes.js';

type Payload = Record<string, unknown>;

const USER_ID = /^[1-9][0-9]{0,9}$/;
const MAX_INT = 2_147_483_647;

/** The user id an accountId names, when it is one of this service's users' ids. */
export function userIdOf(accountId: unknown): number | null {
  if (typeof accountId !== 'string' || !USER_ID.test(accountId)) return null;
  const id = Number(accountId);
  return id <= MAX_INT ? id : null;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

export interface AdapterOptions {
  db: Kysely<Database>;
  /** Clients are read through it, and what the provider changes is forgotten by it. */
  clients: OauthClientCache;
  /** Seals client secrets at rest. */
  secretKey: Buffer;
  /** The request being answered, where the provider keeps the result of the hosted sign-in. */
  currentContext: () => ProviderContext | undefined;
  /** SESSION_MAX_DAYS: no service session is carried past this many days from its opening. */
  sessionMaxDays: number;
}

/**
 * A client whose sealed secret no longer opens. The provider answers it as `server_error` with this
 * error's description (it shows the descriptions of errors marked `expose` only) rather than refusing
 * the client's metadata in its own words.
 */
export class UnreadableClientSecret extends Error {
  readonly expose = true;
  readonly statusCode = 500;
  readonly error_description: string;

  constructor(clientId: string) {
    const cause = new UnreadableSecret(`the secret of the OAuth client ${clientId}`);
    super('server_error', { cause });
    this.error_description = cause.message;
  }
}

/** The metadata a client of `oauth_clients` is given to the provider with: its row's metadata, id, secret and whether it registered itself. */
export function clientMetadata(
  row: { client_id: string; metadata: Payload; client_secret_sealed: string | null; registered: boolean },
  secretKey: Buffer,
): Payload {
  const secret = row.client_secret_sealed === null ? undefined : unseal(secretKey, row.client_secret_sealed);
  if (row.client_secret_sealed !== null && secret === undefined) throw new UnreadableClientSecret(row.client_id);
  return {
    ...row.metadata,
    client_id: row.client_id,
    ...(secret === undefined ? {} : { client_secret: secret }),
    [SELF_REGISTERED]: row.registered,
  };
}

/**
 * oidc-provider's storage (its Adapter interface) over the service's database: clients in
 * `oauth_clients`, every other model in `oidc_records`. One instance per model name.
 */
export function adapterClass(options: AdapterOptions) {
  const { db, secretKey } = options;
  return class DatabaseAdapter {
    constructor(readonly model: string) {}

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      if (this.model === 'Client') {
        // A client registered (or updated) through dynamic registration; never first party.
        // The column says whether it registered itself; the metadata does not keep a copy.
        const { client_secret: secret, [SELF_REGISTERED]: _registered, ...metadata } = payload;
        const confidential = payload.token_endpoint_auth_method !== 'none';
        await upsertRegisteredClient(db, {
          client_id: id,
          name: text(payload.client_name) ?? id,
          type: confidential ? 'confidential' : 'public',
          client_secret_sealed: typeof secret === 'string' ? seal(secretKey, secret) : null,
          metadata,
          first_party: false,
          registered: true,
        });
        options.clients.forget(id);
        return;
      }
      const login = this.model === 'Session' ? options.currentContext()?.oidc?.result?.login : undefined;
      const serviceSessionId = typeof login?.serviceSessionId === 'string' ? login.serviceSessionId : undefined;
      const params = payload.params as Payload | undefined;
      const expiresAt = typeof expiresIn === 'number' ? new Date(Date.now() + (expiresIn + keptPastExpiry(this.model)) * 1000) : null;
      forgetRecord(this.model, id);
      const record = {
        model: this.model,
        id,
        payload,
        grantId: text(payload.grantId),
        uid: text(payload.uid),
        sessionUid: text(payload.sessionUid) ?? (this.model === 'Session' ? text(payload.uid) : null),
        userCode: text(payload.userCode),
        userId: userIdOf(payload.accountId) ?? userOfInteraction(payload),
        clientId: text(payload.clientId) ?? text(params?.client_id),
        serviceSessionId,
        expiresAt,
      };
      const writes = writesOf(options.currentContext());
      if (writes && TOKEN_MODELS.includes(this.model)) {
        await writes.save(record);
        return;
      }
      await writeHeld();
      await upsertOidcRecord(db, record);
      // The service session the hosted sign-in opened lives as long as the provider session it backs
      // (to the second the provider counts in).
      if (this.model === 'Session' && typeof payload.exp === 'number') {
        await followProviderSession(db, id, new Date(payload.exp * 1000), options.sessionMaxDays);
      }
    }

    async find(id: string): Promise<Payload | undefined> {
      if (this.model === 'Client') {
        const row = await options.clients.find(id);
        if (!row) return undefined;
        // The cache hands out the same row until the client changes: its secret is unsealed once.
        let metadata = metadataOfRow.get(row);
        if (!metadata) {
          metadata = clientMetadata(row, secretKey);
          metadataOfRow.set(row, metadata);
        }
        return { ...metadata };
      }
      if (writesOf(options.currentContext())?.holds(this.model, id)) await writeHeld();
      if (this.model === 'Session') return withConsumed(await findLiveProviderSession(db, { id }));
      const reads = readsOfRequest();
      if (!reads) return withConsumed(await findOidcRecord(db, this.model, id));
      const key = recordKey(this.model, id);
      if (!reads.records.has(key)) {
        if (READ_WITH_RELATED.includes(this.model)) readTokensWithRelated(reads, this.model, id);
        else reads.records.set(key, findOidcRecord(db, this.model, id));
      }
      // A copy each time: the provider builds its models over the payload it is given.
      return copyOf(withConsumed(await reads.records.get(key)));
    }

    async findByUserCode(userCode: string): Promise<Payload | undefined> {
      await writeHeld();
      return withConsumed(await findOidcRecordByUserCode(db, this.model, userCode));
    }

    async findByUid(uid: string): Promise<Payload | undefined> {
      await writeHeld();
      if (this.model === 'Session') {
        // Read with the token bound to it, when the request presented one.
        const kept = readsOfRequest()?.sessionsByUid.get(uid);
        return kept ? copyOf(withConsumed(await kept)) : withConsumed(await findLiveProviderSession(db, { uid }));
      }
      return withConsumed(await findOidcRecordByUid(db, this.model, uid));
    }

    async consume(id: string): Promise<void> {
      forgetRecord(this.model, id);
      const writes = writesOf(options.currentContext());
      if (writes) {
        await writes.consume(this.model, id);
        return;
      }
      await consumeOidcRecord(db, this.model, id);
    }

    async destroy(id: string): Promise<void> {
      await writeHeld();
      if (this.model === 'Client') {
        await deleteOauthClient(db, id);
        options.clients.forget(id);
        return;
      }
      // Signing out at an application's request ends the service session the hosted sign-in opened
      // too (and, through it, the provider session's tokens); a provider session given a new id
      // on a later sign-in only drops its old record.
      forgetRecord(this.model, id);
      if (this.model === 'Session' && options.currentContext()?.oidc?.route === 'end_session_confirm') {
        const serviceSession = await findServiceSessionOfRecord(db, id);
        if (serviceSession) await revokeSession(db, serviceSession);
      }
      await deleteOidcRecord(db, this.model, id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await writeHeld();
      const reads = readsOfRequest();
      reads?.records.clear();
      reads?.sessionsByUid.clear();
      await deleteOidcRecordsOfGrant(db, this.model, grantId);
    }
  };

  /** Makes the writes held for the request being answered (see request-writes.ts), before a write or read that must follow them. */
  async function writeHeld(): Promise<void> {
    await writesOf(options.currentContext())?.write();
  }

  /** What the provider has read in the request it is answering (see request-reads.ts). */
  function readsOfRequest(): RequestReads | undefined {
    return readsOf(options.currentContext());
  }

  /** A write to a record: what was read of it in this request no longer holds. */
  function forgetRecord(model: string, id: string): void {
    const reads = readsOfRequest();
    if (!reads) return;
    reads.records.delete(recordKey(model, id));
    // A provider session is also kept by uid, which its id does not tell.
    if (model === 'Session') reads.sessionsByUid.clear();
  }

  /**
   * Reads a token with its grant, its provider session and its person in one round trip, and keeps
   * them all. Introspection and revocation look a token up as every kind at once (the caller need not
   * say which it is): those lookups share the one read.
   */
  function readTokensWithRelated(reads: RequestReads, model: string, id: string): void {
    const route = options.currentContext()?.oidc?.route;
    const anyToken = route === 'introspection' || route === 'revocation';
    const models = anyToken ? TOKEN_MODELS : [model];
    const rows = findTokenRecordsWithRelated(db, anyToken ? ANY_TOKEN : model, id);
    // Before the tokens' own callbacks, so that the rest is kept by the time the token is returned.
    void rows.then(
      (found) => {
        for (const row of found) {
          if (row.grant_id !== null && !reads.records.has(recordKey('Grant', row.grant_id))) {
            reads.records.set(recordKey('Grant', row.grant_id), kept(row.grant_payload, row.grant_consumed_at));
          }
          if (row.session_uid !== null && !reads.sessionsByUid.has(row.session_uid)) {
            reads.sessionsByUid.set(row.session_uid, kept(row.session_payload, row.session_consumed_at));
          }
          if (row.user_id !== null && !reads.users.has(row.user_id)) reads.users.set(row.user_id, Promise.resolve(row.user ?? undefined));
        }
      },
      () => undefined,
    );
    for (const each of models) {
      const key = recordKey(each, id);
      if (reads.records.has(key)) continue;
      reads.records.set(
        key,
        rows.then((found) => {
          const row = found.find((candidate) => candidate.model === each);
          return row && { payload: row.payload, consumed_at: row.consumed_at };
        }),
      );
    }
  }
}

const kept = (payload: Payload | null, consumedAt: Date | null): Promise<KeptRecord | undefined> =>
  Promise.resolve(payload === null ? undefined : { payload, consumed_at: consumedAt });
const metadataOfRow = new WeakMap<object, Payload>();
/** The models read with their grant, provider session and person: the tokens, and the code a client exchanges for them. */
const READ_WITH_RELATED: readonly string[] = [...TOKEN_MODELS, 'AuthorizationCode'];
const copyOf = (payload: Payload | undefined): Payload | undefined => payload && (copyOfJson(payload) as Payload);

/**
 * A deep copy of a value parsed from JSON (objects, arrays, strings, numbers, booleans, null): a
 * fraction of structuredClone's cost, which serializes the whole value and reads it back. A key
 * `__proto__` (JSON may hold one: a client's `claims` parameter is kept in the grant) stays a key of
 * its own rather than becoming the copy's prototype.
 */
function copyOfJson(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyOfJson);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const each = copyOfJson((value as Record<string, unknown>)[key]);
    if (key === '__proto__') Object.defineProperty(copy, key, { value: each, enumerable: true, writable: true, configurable: true });
    else copy[key] = each;
  }
  return copy;
}

/**
 * Seconds a record is kept after the provider counts it expired. A device code stays an hour, so that
 * the device's late poll is told `expired_token` (the library reads the expiry from the payload)
 * rather than `invalid_grant` for a code it no longer finds.
 */
const keptPastExpiry = (model: string): number => (model === 'DeviceCode' ? 3600 : 0);

/**
 * The person a sign-in under way belongs to once they are known (signed in already, or just now), so
 * that ending the person's access ends it too.
 */
function userOfInteraction(payload: Payload): number | null {
  const session = payload.session as Payload | undefined;
  const login = (payload.result as { login?: Payload } | undefined)?.login;
  return userIdOf(session?.accountId) ?? userIdOf(login?.accountId);
}

function withConsumed(row: { payload: Payload; consumed_at: Date | null } | undefined): Payload | undefined {
  if (!row) return undefined;
  return row.consumed_at === null ? row.payload : { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) };
}
