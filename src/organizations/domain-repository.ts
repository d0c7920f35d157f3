import type { Selectable } from 'kysely';
import type { Executor, Timestamp } from '../db/types.js';
import type { IdentityProviderTable } from '../providers/provider-repository.js';
import type { OrganizationTable } from './organization-repository.js';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type OrganizationDomainTable = {
  organization_id: number;
  domain: string;
  verification_token: string;
  verified_at: Date | null;
  created_at: Timestamp;
};

export type OrganizationSignInTable = {
  organization_id: number;
  mfa_required: boolean;
  identity_provider_id: number | null;
  sso_required: boolean;
  auto_join_role: string | null;
  updated_at: Timestamp;
};

type DomainTables = {
  organizations: OrganizationTable;
  organization_domains: OrganizationDomainTable;
  organization_sign_in: OrganizationSignInTable;
  identity_providers: IdentityProviderTable;
};

export type OrganizationDomainRow = Selectable<OrganizationDomainTable>;

/** An organisation's sign-in policy, its provider named by slug. */
export interface SignInPolicyRow {
  mfa_required: boolean;
  identity_provider: string | null;
  sso_required: boolean;
  auto_join_role: string | null;
}

/** What a verified domain says of the people at it: whose it is, and how they sign in. */
export interface DomainPolicyRow {
  organization_id: number;
  organization_slug: string;
  organization_name: string;
  provider_slug: string | null;
  provider_name: string | null;
  provider_enabled: boolean | null;
  sso_required: boolean;
  auto_join_role: string | null;
}

const tables = (db: Executor) => db.withTables<DomainTables>();

// Domains

/** The new domain, or undefined when the organisation has it already. */
export function insertDomain(
  db: Executor,
  values: { organizationId: number; domain: string; token: string },
): Promise<OrganizationDomainRow | undefined> {
  return tables(db)
    .insertInto('organization_domains')
    .values({ organization_id: values.organizationId, domain: values.domain, verification_token: values.token })
    .onConflict((oc) => oc.columns(['organization_id', 'domain']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function listDomains(db: Executor, organizationId: number): Promise<OrganizationDomainRow[]> {
  return tables(db)
    .selectFrom('organization_domains')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('domain')
    .execute();
}

export function findDomain(db: Executor, organizationId: number, domain: string): Promise<OrganizationDomainRow | undefined> {
  return tables(db)
    .selectFrom('organization_domains')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('domain', '=', domain)
    .executeTakeFirst();
}

/** The organisation that has verified the domain, if one has. */
export async function findVerifiedDomainHolder(db: Executor, domain: string): Promise<number | undefined> {
  const row = await tables(db)
    .selectFrom('organization_domains')
    .select('organization_id')
    .where('domain', '=', domain)
    .where('verified_at', 'is not', null)
    .executeTakeFirst();
  return row?.organization_id;
}

/** Marks the domain verified now; a unique violation when another organisation has verified it meanwhile. */
export function markDomainVerified(db: Executor, organizationId: number, domain: string): Promise<OrganizationDomainRow | undefined> {
  return tables(db)
    .updateTable('organization_domains')
    .set({ verified_at: new Date() })
    .where('organization_id', '=', organizationId)
    .where('domain', '=', domain)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteDomain(db: Executor, organizationId: number, domain: string): Promise<OrganizationDomainRow | undefined> {
  return tables(db)
    .deleteFrom('organization_domains')
    .where('organization_id', '=', organizationId)
    .where('domain', '=', domain)
    .returningAll()
    .executeTakeFirst();
}

// Sign-in policy

const DEFAULT_POLICY: SignInPolicyRow = { mfa_required: false, identity_provider: null, sso_required: false, auto_join_role: null };

/** The organisation's policy; the defaults when none was ever set. */
export async function findSignInPolicy(db: Executor, organizationId: number): Promise<SignInPolicyRow> {
  const row = await tables(db)
    .selectFrom('organization_sign_in')
    .leftJoin('identity_providers', 'identity_providers.id', 'organization_sign_in.identity_provider_id')
    .select([
      'organization_sign_in.mfa_required',
      'identity_providers.slug as identity_provider',
      'organization_sign_in.sso_required',
      'organization_sign_in.auto_join_role',
    ])
    .where('organization_sign_in.organization_id', '=', organizationId)
    .executeTakeFirst();
  return row ?? DEFAULT_POLICY;
}

export async function saveSignInPolicy(
  db: Executor,
  organizationId: number,
  values: { mfa_required: boolean; identity_provider_id: number | null; sso_required: boolean; auto_join_role: string | null },
): Promise<void> {
  await tables(db)
    .insertInto('organization_sign_in')
    .values({ organization_id: organizationId, ...values })
    .onConflict((oc) => oc.column('organization_id').doUpdateSet({ ...values, updated_at: new Date() }))
    .execute();
}

/** The organisation that has verified the domain, with its sign-in policy; undefined when none has. */
export function findDomainPolicy(db: Executor, domain: string): Promise<DomainPolicyRow | undefined> {
  return tables(db)
    .selectFrom('organization_domains')
    .innerJoin('organizations', 'organizations.id', 'organization_domains.organization_id')
    .leftJoin('organization_sign_in', 'organization_sign_in.organization_id', 'organization_domains.organization_id')
    .leftJoin('identity_providers', 'identity_providers.id', 'organization_sign_in.identity_provider_id')
    .select((eb) => [
      'organizations.id as organization_id',
      'organizations.slug as organization_slug',
      'organizations.name as organization_name',
      'identity_providers.slug as provider_slug',
      'identity_providers.name as provider_name',
      'identity_providers.enabled as provider_enabled',
      eb.fn.coalesce('organization_sign_in.sso_required', eb.lit(false)).as('sso_required'),
      'organization_sign_in.auto_join_role',
    ])
    .where('organization_domains.domain', '=', domain)
    .where('organization_domains.verified_at', 'is not', null)
    .executeTakeFirst();
}

/** Whether the organisation asks its members for a second factor. */
export async function requiresSecondFactor(db: Executor, organizationId: number): Promise<boolean> {
  const row = await tables(db)
    .selectFrom('organization_sign_in')
    .select('mfa_required')
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return row?.mfa_required ?? false;
}

/** The id of the identity provider with the slug; undefined when there is none. */
export async function findProviderId(db: Executor, slug: string): Promise<number | undefined> {
  const row = await tables(db).selectFrom('identity_providers').select('id').where('slug', '=', slug).executeTakeFirst();
  return row?.id;
}

/** Whether any verified domain sends its people to an enabled identity provider. */
export async function anyDomainWithProvider(db: Executor): Promise<boolean> {
  const row = await tables(db)
    .selectFrom('organization_domains')
    .innerJoin('organization_sign_in', 'organization_sign_in.organization_id', 'organization_domains.organization_id')
    .innerJoin('identity_providers', 'identity_providers.id', 'organization_sign_in.identity_provider_id')
    .select('organization_domains.domain')
    .where('organization_domains.verified_at', 'is not', null)
    .where('identity_providers.enabled', '=', true)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
