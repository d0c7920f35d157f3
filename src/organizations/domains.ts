import { randomBytes } from 'node:crypto';
import { recordEvent } from '../audit/audit-events.js';
import { isUniqueViolation } from '../db/errors.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Executor } from '../db/types.js';
import { Conflict, NotFound, Validation, VerificationFailed } from '../errors.js';
import type { Principal } from '../principal.js';
import * as repo from './domain-repository.js';
import type { OrganizationDomainRow } from './domain-repository.js';
import type { TxtAnswer } from './dns-lookup.js';
import type { OrganizationRow } from './organization-repository.js';
import type { Organizations } from './organizations.js';

/** Where the TXT record that verifies a domain lives. */
export const verificationName = (domain: string) => `_account-verification.${domain}`;

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

const domainNotFound = () => new NotFound('Domain not found');

/**
 * The domains an organisation claims. A domain is verified by a DNS TXT record holding the token
 * the service gave when it was added; once verified it is the organisation's alone, and the people
 * at it sign in as the organisation's sign-in policy says.
 */
export class OrganizationDomains {
  constructor(
    private readonly db: Executor,
    private readonly transact: Transact,
    private readonly organizations: Organizations,
    private readonly lookupTxt: (name: string) => Promise<TxtAnswer>,
  ) {}

  async list(principal: Principal, id: number): Promise<OrganizationDomainRow[]> {
    await this.organizations.access(this.db, principal, id, 'org:read');
    return repo.listDomains(this.db, id);
  }

  async add(principal: Principal, id: number, input: string): Promise<OrganizationDomainRow> {
    const domain = checkedDomain(input, 'body.domain');
    return this.transact(async (trx) => {
      const { organization } = await this.organizations.access(trx, principal, id, 'org:update', true);
      const token = randomBytes(24).toString('base64url');
      const added = await repo.insertDomain(trx, { organizationId: id, domain, token });
      if (!added) throw new Conflict('The organization has this domain already');
      await this.record(trx, principal, 'organization.domain_added', organization, domain);
      return added;
    });
  }

  /** Verifies the domain when its TXT record holds the token; 409 when another organisation verified it first. */
  async verify(principal: Principal, id: number, input: string): Promise<OrganizationDomainRow> {
    const domain = checkedDomain(input, 'path.domain');
    await this.organizations.access(this.db, principal, id, 'org:update');
    const claimed = await repo.findDomain(this.db, id, domain);
    if (!claimed) throw domainNotFound();
    if (claimed.verified_at !== null) return claimed;
    const holder = await repo.findVerifiedDomainHolder(this.db, domain);
    if (holder !== undefined && holder !== id) throw verifiedElsewhere();
    const name = verificationName(domain);
    const answer = await this.lookupTxt(name);
    if ('failure' in answer)
      throw new VerificationFailed(`The TXT records at ${name} could not be looked up (${answer.failure}): try again`);
    if (!answer.records.includes(claimed.verification_token)) {
      throw new VerificationFailed(`No TXT record at ${name} holds the token: publish it and try again`);
    }
    try {
      return await this.transact(async (trx) => {
        const { organization } = await this.organizations.access(trx, principal, id, 'org:update', true);
        const verified = await repo.markDomainVerified(trx, id, domain);
        if (!verified) throw domainNotFound();
        await this.record(trx, principal, 'organization.domain_verified', organization, domain);
        return verified;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw verifiedElsewhere();
      throw error;
    }
  }

  async remove(principal: Principal, id: number, input: string): Promise<void> {
    const domain = checkedDomain(input, 'path.domain');
    await this.transact(async (trx) => {
      const { organization } = await this.organizations.access(trx, principal, id, 'org:update', true);
      if (!(await repo.deleteDomain(trx, id, domain))) throw domainNotFound();
      await this.record(trx, principal, 'organization.domain_removed', organization, domain);
    });
  }

  private record(
    trx: UnitOfWork,
    principal: Principal,
    type: 'organization.domain_added' | 'organization.domain_verified' | 'organization.domain_removed',
    organization: OrganizationRow,
    domain: string,
  ) {
    return recordEvent(trx, {
      type,
      actor: principal.user.id,
      subject: null,
      details: { organization_id: organization.id, slug: organization.slug, name: organization.name, domain },
      origin: principal.client,
    });
  }
}

const verifiedElsewhere = () => new Conflict('Another organization has verified this domain');

/**
 * A domain as stored: lower-case, without a trailing dot, of at least two labels of letters, digits
 * and inner hyphens, whose last is not digits alone (an IP address is not a domain).
 */
export function checkedDomain(input: string, field: string): string {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  const labels = domain.split('.');
  const valid = domain.length <= 253 && labels.length >= 2 && labels.every((label) => LABEL.test(label)) && !/^\d+$/.test(labels.at(-1)!);
  if (!valid)
    throw new Validation([{ field, message: 'must be a domain name such as example.com (an internationalised one in its xn-- form)' }]);
  return domain;
}
