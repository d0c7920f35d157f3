import { sql, type Transaction } from 'kysely';
import type { Database, Executor } from './types.js';

/**
 * The tables the purge keeps small, each with the columns that say when a row stopped mattering:
 * a session once revoked or expired, a reset or verification token, an e-mailed code, a provider sign-in under
 * way or its one-time code once used or expired, a mail
 * message once sent or given up, an audit event once it happened (kept only while the audit retention
 * is set). A row goes once any such moment is past the retention; a row with none (a live session, a
 * message still to send) is never touched. The OpenID Connect provider's records (its sessions,
 * interactions, grants, codes and tokens) go once expired, and so do organisations' invitations (an
 * expired one is listed, and can be sent again, until then). Second-factor challenges clear
 * themselves as new ones are made (see insertChallenge).
 */
export const PURGE_RULES = {
  sessions: ['revoked_at', 'expires_at'],
  account_tokens: ['used_at', 'expires_at'],
  email_codes: ['used_at', 'expires_at'],
  provider_flows: ['used_at', 'expires_at'],
  provider_codes: ['used_at', 'expires_at'],
  mail_outbox: ['sent_at', 'failed_at'],
  audit_events: ['occurred_at'],
  oidc_records: ['expires_at'],
  organization_invitations: ['expires_at'],
} as const;

export type PurgeTarget = keyof typeof PURGE_RULES;

export const PURGE_TARGETS = Object.keys(PURGE_RULES) as PurgeTarget[];

/** Key of the advisory lock that lets one process at a time purge the database; any fixed number will do. */
export const HOUSEKEEPING_LOCK_KEY = 7_303_014_101;

/**
 * Takes the housekeeping lock for the rest of the transaction, without waiting: false when another
 * transaction holds it. The lock ends with the transaction, so it cannot outlive a crashed process.
 */
export async function tryHousekeepingLock(trx: Transaction<Database>): Promise<boolean> {
  const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${HOUSEKEEPING_LOCK_KEY}::bigint) as locked`.execute(
    trx,
  );
  return rows[0]?.locked === true;
}

/**
 * Deletes at most `limit` rows of `target` that stopped mattering more than `retentionHours` ago;
 * returns how many it deleted. Rows another transaction has locked are skipped, not waited for.
 */
export async function purgeBatch(db: Executor, target: PurgeTarget, retentionHours: number, limit: number): Promise<number> {
  const cutoff = sql`now() - make_interval(hours => ${retentionHours}::int)`;
  const past = sql.join(
    PURGE_RULES[target].map((column) => sql`${sql.ref(column)} < ${cutoff}`),
    sql` or `,
  );
  const table = sql.table(target);
  // The provider's records are keyed by their model and id together.
  const [key, columns] = target === 'oidc_records' ? [sql`(model, id)`, sql`model, id`] : [sql`id`, sql`id`];
  const result = await sql`
    delete from ${table}
    where ${key} in (
      select ${columns} from ${table}
      where ${past}
      limit ${limit}::int
      for update skip locked
    )`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
