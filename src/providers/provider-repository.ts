import { sql, type ColumnType, type Generated, type Selectable } from 'kysely';
import type { Executor, Timestamp } from '../db/types.js';

/** Which fields of an ID token or user-info answer hold the person's details. */
export interface ProviderClaims {
  subject: string;
  email: string;
  /** Null when the provider asserts no verified flag there. */
  email_verified: string | null;
  name: string;
}

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type IdentityProviderTable = {
  id: Generated<number>;
  slug: string;
  kind: 'oidc' | 'oauth2';
  name: string;
  client_id: string;
  client_secret_sealed: string | null;
  issuer: string | null;
  authorization_url: string | null;
  token_url: string | null;
  userinfo_url: string | null;
  emails_url: string | null;
  scopes: string[];
  claims: ColumnType<ProviderClaims, string, string>;
  enabled: Generated<boolean>;
  allow_signup: Generated<boolean>;
  /** An address the provider does not vouch for counts as verified all the same (an admin's choice). */
  trust_email: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

type ProviderTables = { identity_providers: IdentityProviderTable };

export type IdentityProviderRow = Selectable<IdentityProviderTable>;

/** A provider's settings as the rules have checked them; the secret already sealed. */
export type ProviderSettings = Omit<IdentityProviderRow, 'id' | 'created_at' | 'updated_at'>;

const providers = (db: Executor) => db.withTables<ProviderTables>();

const stored = (settings: Partial<ProviderSettings>) =>
  settings.claims === undefined ? { ...settings, claims: undefined } : { ...settings, claims: JSON.stringify(settings.claims) };

/** The new provider, or undefined when its slug is taken. */
export function insertProvider(db: Executor, settings: ProviderSettings): Promise<IdentityProviderRow | undefined> {
  return providers(db)
    .insertInto('identity_providers')
    .values({ ...settings, claims: JSON.stringify(settings.claims) })
    .onConflict((oc) => oc.column('slug').doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function findProvider(db: Executor, slug: string): Promise<IdentityProviderRow | undefined> {
  return providers(db).selectFrom('identity_providers').selectAll().where('slug', '=', slug).executeTakeFirst();
}

export function findProviderById(db: Executor, id: number): Promise<IdentityProviderRow | undefined> {
  return providers(db).selectFrom('identity_providers').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listProviders(db: Executor, options: { enabledOnly?: boolean } = {}): Promise<IdentityProviderRow[]> {
  let query = providers(db).selectFrom('identity_providers').selectAll();
  if (options.enabledOnly) query = query.where('enabled', '=', true);
  return query.orderBy('slug').execute();
}

export function updateProvider(
  db: Executor,
  slug: string,
  changes: Partial<Omit<ProviderSettings, 'slug' | 'kind'>>,
): Promise<IdentityProviderRow | undefined> {
  const { claims, ...rest } = stored(changes);
  return providers(db)
    .updateTable('identity_providers')
    .set({ ...rest, ...(claims !== undefined ? { claims } : {}), updated_at: sql`now()` })
    .where('slug', '=', slug)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteProvider(db: Executor, slug: string): Promise<boolean> {
  const deleted = await providers(db).deleteFrom('identity_providers').where('slug', '=', slug).executeTakeFirst();
  return deleted.numDeletedRows > 0n;
}
