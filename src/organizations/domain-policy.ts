import { recordEvent, type RequestOrigin } from '../audit/audit-events.js';
import type { UnitOfWork } from '../db/transaction.js';
import type { Executor, UserRow } from '../db/types.js';
import { MfaEnrollmentRequired, SsoRequired } from '../errors.js';
import { countConfirmedFactors } from '../mfa/factor-repository.js';
import { findDomainPolicy, requiresSecondFactor, type DomainPolicyRow } from './domain-repository.js';
import { insertMember } from './organization-repository.js';

/** The part of an address after its last `@`, as stored (already lower-cased). */
export const domainOfAddress = (email: string) => email.slice(email.lastIndexOf('@') + 1);

/** The organisation that verified the address's domain, with its policy; undefined when none did. */
export function policyForAddress(db: Executor, email: string): Promise<DomainPolicyRow | undefined> {
  return findDomainPolicy(db, domainOfAddress(email));
}

/** The provider a verified domain's people sign in with, when it has one that is enabled. */
export function providerOf(policy: DomainPolicyRow | undefined): { slug: string; name: string } | undefined {
  if (!policy?.provider_slug || !policy.provider_name || !policy.provider_enabled) return undefined;
  return { slug: policy.provider_slug, name: policy.provider_name };
}

/**
 * Refuses a sign-in other than through the organisation's provider for a person whose verified
 * address is at a domain of an organisation with `sso_required`. An address nobody has proven
 * proves nothing about the person, so it binds them to nothing. `viaProvider`: the provider signed in with.
 */
export async function refuseUnlessSso(db: Executor, user: UserRow, viaProvider?: string): Promise<void> {
  if (!user.email_verified) return;
  const policy = await policyForAddress(db, user.email);
  const provider = providerOf(policy);
  if (policy?.sso_required && provider && provider.slug !== viaProvider) throw new SsoRequired(provider.slug);
}

/** Refuses to act for an organisation with `mfa_required` a member who has no second factor. */
export async function requireSecondFactorFor(db: Executor, userId: number, organizationId: number): Promise<void> {
  if (await requiresSecondFactor(db, organizationId)) await requireAnySecondFactor(db, userId);
}

/** Refuses a person who has no second factor, for an organisation known to require one. */
export async function requireAnySecondFactor(db: Executor, userId: number): Promise<void> {
  if ((await countConfirmedFactors(db, userId)) === 0) throw new MfaEnrollmentRequired();
}

/**
 * The person has just proven their address: when its domain is verified by an organisation with
 * `auto_join_role`, they join it with that role (a member already keeps the role they have).
 */
export async function joinByDomain(trx: UnitOfWork, user: UserRow, origin: RequestOrigin): Promise<void> {
  if (!user.email_verified || user.deleted_at !== null) return;
  const policy = await policyForAddress(trx, user.email);
  if (!policy?.auto_join_role) return;
  const role = policy.auto_join_role;
  if (!(await insertMember(trx, { organizationId: policy.organization_id, userId: user.id, role }))) return;
  await recordEvent(trx, {
    type: 'organization.member_added',
    actor: user.id,
    subject: user.id,
    details: {
      organization_id: policy.organization_id,
      slug: policy.organization_slug,
      name: policy.organization_name,
      role,
      auto_join: true,
    },
    origin,
  });
}
