import { recordEvent } from '../audit/audit-events.js';
import type { Transact } from '../db/transaction.js';
import type { Executor } from '../db/types.js';
import { Validation, type FieldProblem } from '../errors.js';
import type { Principal } from '../principal.js';
import { requestedEmail } from '../email-address.js';
import { policyForAddress, providerOf } from './domain-policy.js';
import * as repo from './domain-repository.js';
import type { SignInPolicyRow } from './domain-repository.js';
import { findRole } from './organization-repository.js';
import { OWNER, type Organizations } from './organizations.js';

export type SignInPolicyChange = Partial<SignInPolicyRow>;

/** Where an address signs in: its organisation and that organisation's provider. */
export interface SingleSignOn {
  organization: { id: number; slug: string; name: string };
  provider: { slug: string; name: string };
}

/**
 * How an organisation's people sign in: a second factor to act for it, its own identity provider
 * (and whether it is the only way in for the people at its verified domains), and the role that
 * people proving an address at those domains join with.
 */
export class OrganizationSignIn {
  constructor(
    private readonly db: Executor,
    private readonly transact: Transact,
    private readonly organizations: Organizations,
  ) {}

  async get(principal: Principal, id: number): Promise<SignInPolicyRow> {
    await this.organizations.access(this.db, principal, id, 'org:read');
    return repo.findSignInPolicy(this.db, id);
  }

  async update(principal: Principal, id: number, change: SignInPolicyChange): Promise<SignInPolicyRow> {
    await this.transact(async (trx) => {
      const { organization } = await this.organizations.access(trx, principal, id, 'org:update', true);
      const next = { ...(await repo.findSignInPolicy(trx, id)), ...change };
      const problems: FieldProblem[] = [];
      const providerId = next.identity_provider === null ? null : await repo.findProviderId(trx, next.identity_provider);
      if (providerId === undefined) {
        problems.push({ field: 'body.identity_provider', message: `no identity provider has the slug "${next.identity_provider}"` });
      }
      if (next.sso_required && next.identity_provider === null) {
        problems.push({ field: 'body.sso_required', message: 'needs an identity_provider to send people to' });
      }
      if (next.auto_join_role !== null) {
        if (next.auto_join_role === OWNER)
          problems.push({ field: 'body.auto_join_role', message: 'nobody joins as an owner by their address' });
        else if (!(await findRole(trx, next.auto_join_role, 'share'))) {
          problems.push({
            field: 'body.auto_join_role',
            message: `no role has the key "${next.auto_join_role}": see GET /api/organization-roles`,
          });
        }
      }
      if (problems.length > 0) throw new Validation(problems);
      await repo.saveSignInPolicy(trx, id, {
        mfa_required: next.mfa_required,
        identity_provider_id: providerId ?? null,
        sso_required: next.sso_required,
        auto_join_role: next.auto_join_role,
      });
      await recordEvent(trx, {
        type: 'organization.sign_in_updated',
        actor: principal.user.id,
        subject: null,
        details: { organization_id: organization.id, slug: organization.slug, name: organization.name, fields: Object.keys(change) },
        origin: principal.client,
      });
    });
    return repo.findSignInPolicy(this.db, id);
  }

  /** The organisation and provider an address signs in with, when its domain has one. */
  async singleSignOn(email: string): Promise<SingleSignOn | null> {
    const policy = await policyForAddress(this.db, requestedEmail(email, 'query.email'));
    const provider = providerOf(policy);
    if (!policy || !provider) return null;
    return { organization: { id: policy.organization_id, slug: policy.organization_slug, name: policy.organization_name }, provider };
  }

  /**
   * Whether signing in has to start with the address: some verified domain sends its people to
   * their organisation's identity provider (the hosted sign-in then asks for the address first).
   */
  routesByAddress(): Promise<boolean> {
    return repo.anyDomainWithProvider(this.db);
  }
}
