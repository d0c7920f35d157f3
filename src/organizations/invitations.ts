import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { recordEvent, type RequestOrigin } from '../audit/audit-events.js';
import type { AccountConfig, OrganizationConfig } from '../config/index.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database, Executor } from '../db/types.js';
import { requestedEmail } from '../email-address.js';
import { Conflict, Forbidden, NotFound, Validation } from '../errors.js';
import type { Outbox } from '../infra/outbox.js';
import { invitationMail } from '../mail/templates.js';
import type { Clock } from '../mfa/factors.js';
import { isAdmin, type Principal } from '../principal.js';
import * as invitations from './invitation-repository.js';
import type { InvitationRow } from './invitation-repository.js';
import * as repo from './organization-repository.js';
import type { Membership, OrganizationRow } from './organization-repository.js';
import { OWNER, operatorTarget, type Organizations } from './organizations.js';

const invitationNotFound = () => new NotFound('Invitation not found');

/**
 * Invitations to join an organisation, by e-mail address. Whoever may invite (`members:invite`)
 * names an address and a role; the service mails the address a link, and only a person signed in
 * with that address, verified, may accept: a forwarded link lets nobody else in. Only an owner
 * invites an owner, and an address has at most one pending invitation per organisation.
 */
export class OrganizationInvitations {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    private readonly outbox: Outbox,
    private readonly organizations: Organizations,
    private readonly config: { organizations: OrganizationConfig; account: AccountConfig },
    private readonly now: Clock,
  ) {}

  async create(principal: Principal, organizationId: number, input: { email: string; role: string }): Promise<InvitationRow> {
    const email = requestedEmail(input.email, 'body.email');
    const invitation = await this.transact(async (trx) => {
      const { caller } = await this.organizations.access(trx, principal, organizationId, 'members:invite', true);
      if (!(await repo.findRole(trx, input.role, 'share'))) {
        throw new Validation([{ field: 'body.role', message: `no role has the key "${input.role}": see GET /api/organization-roles` }]);
      }
      if (input.role === OWNER) onlyAnOwner(principal, caller);
      return this.invite(trx, organizationId, email, input.role, { actor: principal.user.id, origin: principal.client });
    });
    this.outbox.wake();
    return invitation;
  }

  /**
   * The operator's invitation (the command line): to the organisation with this slug, from no one in
   * particular (its `invited_by` is null, and so is its event's actor), in any role.
   */
  async createByOperator(slug: string, input: { email: string; role: string }): Promise<InvitationRow> {
    const email = requestedEmail(input.email, 'email');
    const invitation = await this.transact(async (trx) => {
      const organization = await operatorTarget(trx, slug, input.role);
      return this.invite(trx, organization.id, email, input.role, { actor: null, origin: null });
    });
    this.outbox.wake();
    return invitation;
  }

  /** Makes the invitation, queues its mail and records it; one pending invitation per address, none for a member. */
  private async invite(
    trx: UnitOfWork,
    organizationId: number,
    email: string,
    role: string,
    by: { actor: number | null; origin: RequestOrigin },
  ): Promise<InvitationRow> {
    if (await invitations.isMemberAddress(trx, organizationId, email)) {
      throw new Conflict('The account with this address is a member of the organization already');
    }
    const pending = await invitations.findInvitationFor(trx, organizationId, email);
    if (pending && pending.expires_at.getTime() > this.now()) {
      throw new Conflict('This address has a pending invitation already: resend it, or revoke it first');
    }
    // An expired invitation gives way to the new one.
    if (pending) await invitations.deleteInvitation(trx, pending.id);
    const id = randomUUID();
    const inserted = await invitations.insertInvitation(trx, {
      id,
      organizationId,
      email,
      role,
      invitedBy: by.actor,
      expiresAt: this.expiry(),
    });
    if (!inserted) throw new Conflict('This address has a pending invitation already: resend it, or revoke it first');
    const created = await this.found(trx, id);
    await this.mail(trx, created);
    await recordEvent(trx, {
      type: 'organization.invitation_created',
      actor: by.actor,
      subject: null,
      details: about(created),
      origin: by.origin,
    });
    return created;
  }

  async list(principal: Principal, organizationId: number): Promise<InvitationRow[]> {
    await this.organizations.access(this.db, principal, organizationId, 'members:invite');
    return invitations.listOrganizationInvitations(this.db, organizationId);
  }

  /** Mails the invitation again and renews its expiry from now. */
  async resend(principal: Principal, organizationId: number, id: string): Promise<InvitationRow> {
    const invitation = await this.transact(async (trx) => {
      const { caller } = await this.organizations.access(trx, principal, organizationId, 'members:invite', true);
      const pending = await invitations.findInvitation(trx, id);
      if (pending?.organization_id !== organizationId) throw invitationNotFound();
      if (pending.role === OWNER) onlyAnOwner(principal, caller);
      await invitations.renewInvitation(trx, id, this.expiry());
      const renewed = await this.found(trx, id);
      await this.mail(trx, renewed);
      return renewed;
    });
    this.outbox.wake();
    return invitation;
  }

  async revoke(principal: Principal, organizationId: number, id: string): Promise<void> {
    await this.transact(async (trx) => {
      await this.organizations.access(trx, principal, organizationId, 'members:invite', true);
      const pending = await invitations.findInvitation(trx, id);
      if (pending?.organization_id !== organizationId || !(await invitations.deleteInvitation(trx, id))) throw invitationNotFound();
      await recordEvent(trx, {
        type: 'organization.invitation_revoked',
        actor: principal.user.id,
        subject: null,
        details: about(pending),
        origin: principal.client,
      });
    });
  }

  /** The unexpired invitations to the caller's address, once it is verified. */
  async mine(principal: Principal): Promise<InvitationRow[]> {
    if (!principal.user.email_verified) return [];
    return invitations.listInvitationsTo(this.db, principal.user.email, new Date(this.now()));
  }

  /** Joins the organisation with the invitation's role; a member already keeps the role they have. */
  async accept(principal: Principal, id: string): Promise<{ organization: OrganizationRow } & Membership> {
    return this.transact(async (trx) => {
      const invitation = await this.addressedTo(trx, principal, id);
      if (invitation.expires_at.getTime() <= this.now()) {
        throw new Conflict('This invitation has expired: ask the organization to send it again');
      }
      const organization = await repo.lockOrganization(trx, invitation.organization_id);
      if (!organization || !(await invitations.deleteInvitation(trx, id))) throw invitationNotFound();
      const userId = principal.user.id;
      await recordEvent(trx, {
        type: 'organization.invitation_accepted',
        actor: userId,
        subject: userId,
        details: about(invitation),
        origin: principal.client,
      });
      if (await repo.insertMember(trx, { organizationId: organization.id, userId, role: invitation.role })) {
        await recordEvent(trx, {
          type: 'organization.member_added',
          actor: userId,
          subject: userId,
          details: { organization_id: organization.id, slug: organization.slug, name: organization.name, role: invitation.role },
          origin: principal.client,
        });
      }
      const membership = await repo.findMembership(trx, organization.id, userId);
      if (!membership) throw invitationNotFound();
      return { organization, ...membership };
    });
  }

  async decline(principal: Principal, id: string): Promise<void> {
    await this.transact(async (trx) => {
      const invitation = await this.addressedTo(trx, principal, id);
      if (!(await invitations.deleteInvitation(trx, id))) throw invitationNotFound();
      await recordEvent(trx, {
        type: 'organization.invitation_declined',
        actor: principal.user.id,
        subject: principal.user.id,
        details: about(invitation),
        origin: principal.client,
      });
    });
  }

  /**
   * The invitation, when it was sent to the caller's address and that address is verified. Anyone
   * else is told it does not exist, so that a forwarded link neither works nor says whom it invites.
   */
  private async addressedTo(db: Executor, principal: Principal, id: string): Promise<InvitationRow> {
    const invitation = await invitations.findInvitation(db, id);
    if (invitation?.email !== principal.user.email) throw invitationNotFound();
    if (!principal.user.email_verified) {
      throw new Forbidden('Verify your e-mail address before answering an invitation sent to it');
    }
    return invitation;
  }

  private async found(db: Executor, id: string): Promise<InvitationRow> {
    const invitation = await invitations.findInvitation(db, id);
    if (!invitation) throw invitationNotFound();
    return invitation;
  }

  private expiry(): Date {
    return new Date(this.now() + this.config.organizations.invitationExpireMinutes * 60_000);
  }

  private mail(db: Executor, invitation: InvitationRow): Promise<void> {
    return this.outbox.enqueue(
      db,
      invitationMail(invitation.email, {
        organization: invitation.organization_name,
        role: invitation.role,
        inviter: invitation.inviter_name,
        link: `${this.config.account.appUrl}/console/invitations/${invitation.id}`,
        expireMinutes: this.config.organizations.invitationExpireMinutes,
      }),
    );
  }
}

/** Only an owner (or a deployment admin) invites an owner. */
function onlyAnOwner(principal: Principal, caller: Membership | undefined): void {
  if (!isAdmin(principal) && caller?.role !== OWNER) throw new Forbidden('Only an owner may invite an owner');
}

/** What every event of an invitation says of it and of its organisation. */
function about(invitation: InvitationRow) {
  return {
    organization_id: invitation.organization_id,
    slug: invitation.organization_slug,
    name: invitation.organization_name,
    invitation_id: invitation.id,
    email: invitation.email,
    role: invitation.role,
  };
}
