import type { Executor, GivenTimestamp, Timestamp } from '../db/types.js';
import type { OrganizationMemberTable, OrganizationTable } from './organization-repository.js';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type OrganizationInvitationTable = {
  id: string;
  organization_id: number;
  email: string;
  role: string;
  invited_by: number | null;
  created_at: Timestamp;
  expires_at: GivenTimestamp;
};

type InvitationTables = {
  organization_invitations: OrganizationInvitationTable;
  organizations: OrganizationTable;
  organization_members: OrganizationMemberTable;
};

/** A pending invitation as every answer shows it: with its organisation and who invited. */
export interface InvitationRow {
  id: string;
  organization_id: number;
  organization_slug: string;
  organization_name: string;
  email: string;
  role: string;
  invited_by: number | null;
  inviter_email: string | null;
  inviter_name: string | null;
  created_at: Date;
  expires_at: Date;
}

const invitations = (db: Executor) => db.withTables<InvitationTables>();

function shown(db: Executor) {
  return invitations(db)
    .selectFrom('organization_invitations')
    .innerJoin('organizations', 'organizations.id', 'organization_invitations.organization_id')
    .leftJoin('users', 'users.id', 'organization_invitations.invited_by')
    .select([
      'organization_invitations.id',
      'organization_invitations.organization_id',
      'organizations.slug as organization_slug',
      'organizations.name as organization_name',
      'organization_invitations.email',
      'organization_invitations.role',
      'organization_invitations.invited_by',
      'users.email as inviter_email',
      'users.name as inviter_name',
      'organization_invitations.created_at',
      'organization_invitations.expires_at',
    ]);
}

export function findInvitation(db: Executor, id: string): Promise<InvitationRow | undefined> {
  return shown(db).where('organization_invitations.id', '=', id).executeTakeFirst();
}

/** The organisation's pending invitation to the address, expired or not. */
export function findInvitationFor(db: Executor, organizationId: number, email: string): Promise<InvitationRow | undefined> {
  return shown(db)
    .where('organization_invitations.organization_id', '=', organizationId)
    .where('organization_invitations.email', '=', email)
    .executeTakeFirst();
}

/** The organisation's pending invitations, expired ones included, newest first. */
export function listOrganizationInvitations(db: Executor, organizationId: number): Promise<InvitationRow[]> {
  return shown(db)
    .where('organization_invitations.organization_id', '=', organizationId)
    .orderBy('organization_invitations.created_at', 'desc')
    .orderBy('organization_invitations.id')
    .execute();
}

/** The unexpired invitations to the address, newest first. */
export function listInvitationsTo(db: Executor, email: string, now: Date): Promise<InvitationRow[]> {
  return shown(db)
    .where('organization_invitations.email', '=', email)
    .where('organization_invitations.expires_at', '>', now)
    .orderBy('organization_invitations.created_at', 'desc')
    .orderBy('organization_invitations.id')
    .execute();
}

/** Adds an invitation; false when the address already has one for the organisation. */
export async function insertInvitation(
  db: Executor,
  invitation: { id: string; organizationId: number; email: string; role: string; invitedBy: number | null; expiresAt: Date },
): Promise<boolean> {
  const row = await invitations(db)
    .insertInto('organization_invitations')
    .values({
      id: invitation.id,
      organization_id: invitation.organizationId,
      email: invitation.email,
      role: invitation.role,
      invited_by: invitation.invitedBy,
      expires_at: invitation.expiresAt,
    })
    .onConflict((oc) => oc.columns(['organization_id', 'email']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function renewInvitation(db: Executor, id: string, expiresAt: Date): Promise<void> {
  await invitations(db).updateTable('organization_invitations').set({ expires_at: expiresAt }).where('id', '=', id).execute();
}

/** Deletes the invitation; false when it was already gone (accepted, declined or revoked meanwhile). */
export async function deleteInvitation(db: Executor, id: string): Promise<boolean> {
  const row = await invitations(db).deleteFrom('organization_invitations').where('id', '=', id).returning('id').executeTakeFirst();
  return row !== undefined;
}

/** Whether the account holding the address (deleted or not) is a member of the organisation. */
export async function isMemberAddress(db: Executor, organizationId: number, email: string): Promise<boolean> {
  const row = await invitations(db)
    .selectFrom('organization_members')
    .innerJoin('users', 'users.id', 'organization_members.user_id')
    .select('organization_members.user_id')
    .where('organization_members.organization_id', '=', organizationId)
    .where('users.email', '=', email)
    .executeTakeFirst();
  return row !== undefined;
}
