import { sql, type Generated, type Selectable } from 'kysely';
import type { Executor, Timestamp } from '../db/types.js';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type OauthResourceTable = {
  id: Generated<number>;
  /** The API's resource indicator (RFC 8707): an absolute URI without a fragment, its tokens' `aud`. */
  indicator: string;
  name: string;
  /** The scopes the API defines, which applications may ask for. */
  scopes: string[];
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type OauthResourceRow = Selectable<OauthResourceTable>;

export interface NewOauthResource {
  indicator: string;
  name: string;
  scopes: string[];
}

const resources = (db: Executor) => db.withTables<{ oauth_resources: OauthResourceTable }>();

/** Inserts a resource server; undefined when its indicator is taken. */
export function insertOauthResource(db: Executor, resource: NewOauthResource): Promise<OauthResourceRow | undefined> {
  return resources(db)
    .insertInto('oauth_resources')
    .values(resource)
    .onConflict((oc) => oc.column('indicator').doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function listOauthResources(db: Executor): Promise<OauthResourceRow[]> {
  return resources(db).selectFrom('oauth_resources').selectAll().orderBy('id').execute();
}

export function findOauthResource(db: Executor, id: number): Promise<OauthResourceRow | undefined> {
  return resources(db).selectFrom('oauth_resources').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findOauthResourceByIndicator(db: Executor, indicator: string): Promise<OauthResourceRow | undefined> {
  return resources(db).selectFrom('oauth_resources').selectAll().where('indicator', '=', indicator).executeTakeFirst();
}

/** Whether another resource server than `id` has this indicator. */
export async function indicatorTaken(db: Executor, indicator: string, id: number): Promise<boolean> {
  const row = await resources(db)
    .selectFrom('oauth_resources')
    .select('id')
    .where('indicator', '=', indicator)
    .where('id', '!=', id)
    .executeTakeFirst();
  return row !== undefined;
}

export function updateOauthResource(db: Executor, id: number, patch: NewOauthResource): Promise<OauthResourceRow | undefined> {
  return resources(db)
    .updateTable('oauth_resources')
    .set({ ...patch, updated_at: sql`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteOauthResource(db: Executor, id: number): Promise<OauthResourceRow | undefined> {
  return resources(db).deleteFrom('oauth_resources').where('id', '=', id).returningAll().executeTakeFirst();
}
