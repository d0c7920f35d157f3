import { CompiledQuery, sql, type ColumnType, type Generated, type Selectable } from 'kysely';
import { preparedStatement } from '../db/prepared.js';
import type { Executor, Timestamp } from '../db/types.js';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type OauthClientTable = {
  client_id: string;
  name: string;
  type: 'confidential' | 'public';
  client_secret_sealed: string | null;
  /** The client's metadata as the provider reads it (redirect_uris, grant_types, scope, ...), without its secret. */
  metadata: ColumnType<Record<string, unknown>, string, string>;
  first_party: Generated<boolean>;
  /** Registered by the application itself (RFC 7591) rather than made by an admin. */
  registered: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

type ClientTables = { oauth_clients: OauthClientTable; oidc_records: { client_id: string | null; model: string; id: string } };

export type OauthClientRow = Selectable<OauthClientTable>;

export interface NewOauthClient {
  client_id: string;
  name: string;
  type: 'confidential' | 'public';
  client_secret_sealed: string | null;
  metadata: Record<string, unknown>;
  first_party: boolean;
  registered: boolean;
}

const clients = (db: Executor) => db.withTables<ClientTables>();

export function insertOauthClient(db: Executor, client: NewOauthClient): Promise<OauthClientRow> {
  return clients(db)
    .insertInto('oauth_clients')
    .values({ ...client, metadata: JSON.stringify(client.metadata) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Saves a client the provider registered or updated (RFC 7591/7592), keeping what an admin set. */
export async function upsertRegisteredClient(db: Executor, client: NewOauthClient): Promise<void> {
  await clients(db)
    .insertInto('oauth_clients')
    .values({ ...client, metadata: JSON.stringify(client.metadata) })
    .onConflict((oc) =>
      oc.column('client_id').doUpdateSet({
        name: (eb) => eb.ref('excluded.name'),
        type: (eb) => eb.ref('excluded.type'),
        client_secret_sealed: (eb) => eb.ref('excluded.client_secret_sealed'),
        metadata: (eb) => eb.ref('excluded.metadata'),
        updated_at: sql`now()`,
      }),
    )
    .execute();
}

export async function findOauthClient(db: Executor, clientId: string): Promise<OauthClientRow | undefined> {
  return (await db.executeQuery<OauthClientRow>(CompiledQuery.raw(CLIENT_SQL, [clientId]))).rows[0];
}

const CLIENT_SQL = preparedStatement(
  'oauth_client',
  `select client_id, name, type, client_secret_sealed, metadata, first_party, registered, created_at, updated_at
  from oauth_clients where client_id = $1`,
);

export function listOauthClients(db: Executor): Promise<OauthClientRow[]> {
  return clients(db).selectFrom('oauth_clients').selectAll().orderBy('created_at').orderBy('client_id').execute();
}

export function updateOauthClient(
  db: Executor,
  clientId: string,
  patch: { name: string; metadata: Record<string, unknown>; first_party: boolean },
): Promise<OauthClientRow | undefined> {
  return clients(db)
    .updateTable('oauth_clients')
    .set({ name: patch.name, metadata: JSON.stringify(patch.metadata), first_party: patch.first_party, updated_at: sql`now()` })
    .where('client_id', '=', clientId)
    .returningAll()
    .executeTakeFirst();
}

export function setOauthClientSecret(db: Executor, clientId: string, sealed: string): Promise<OauthClientRow | undefined> {
  return clients(db)
    .updateTable('oauth_clients')
    .set({ client_secret_sealed: sealed, updated_at: sql`now()` })
    .where('client_id', '=', clientId)
    .where('type', '=', 'confidential')
    .returningAll()
    .executeTakeFirst();
}

/** Deletes a client and every grant, code and token of it; false when there is no such client. */
export async function deleteOauthClient(db: Executor, clientId: string): Promise<boolean> {
  const row = await clients(db).deleteFrom('oauth_clients').where('client_id', '=', clientId).returning('client_id').executeTakeFirst();
  await clients(db).deleteFrom('oidc_records').where('client_id', '=', clientId).execute();
  return row !== undefined;
}
