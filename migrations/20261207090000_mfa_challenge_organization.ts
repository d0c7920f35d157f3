import type { Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // The organisation a login named, which its second step signs in for. No foreign key: the
  // membership is checked again when the step is verified, and a step lives minutes.
  await db.schema.alterTable('mfa_challenges').addColumn('organization_id', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mfa_challenges').dropColumn('organization_id').execute();
}
