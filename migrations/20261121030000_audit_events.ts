import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // Who did what to whom, and from where. The user columns carry no foreign key on purpose: a
  // cascade would erase the history of a user whose row is ever removed, and SET NULL would forget
  // whom it was about. Identity ids are never reused, so a dangling id still names one account.
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'bigint', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('occurred_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('event_type', 'text', (col) => col.notNull())
    .addColumn('actor_user_id', 'integer')
    .addColumn('subject_user_id', 'integer')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('request_id', 'text')
    .addColumn('details', 'jsonb', (col) => col.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();

  // The list reads by id (the primary key) after a cursor, optionally narrowed by one user (as
  // actor or subject: two indexes a bitmap OR combines), by type, or by time; retention deletes by time.
  await db.schema.createIndex('audit_events_actor_idx').on('audit_events').columns(['actor_user_id', 'id']).where(sql.ref('actor_user_id'), 'is not', null).execute();
  await db.schema.createIndex('audit_events_subject_idx').on('audit_events').columns(['subject_user_id', 'id']).where(sql.ref('subject_user_id'), 'is not', null).execute();
  await db.schema.createIndex('audit_events_type_idx').on('audit_events').columns(['event_type', 'id']).execute();
  await db.schema.createIndex('audit_events_occurred_at_idx').on('audit_events').column('occurred_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('audit_events').execute();
}
