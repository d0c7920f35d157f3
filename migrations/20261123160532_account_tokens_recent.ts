import type { Kysely } from 'kysely';

/**
 * The reset-mail cooldown counts a user's tokens of one purpose issued within the last hour, used
 * or not; the existing index covers unused tokens only.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('account_tokens_user_purpose_created_idx').on('account_tokens').columns(['user_id', 'purpose', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('account_tokens_user_purpose_created_idx').execute();
}
