import type { Transact } from '../db/transaction.js';
import type { NewUserRow } from '../db/types.js';
import { insertImportedUsers } from './user-import-repository.js';
import { isEmailAddress, normalizeEmail } from '../email-address.js';
import { recordEvents, type RequestOrigin } from '../audit/audit-events.js';
import { Validation } from '../errors.js';
import { beyondCaps, importProblem } from '../passwords/password-hashes.js';
import { requireAdmin, type Principal } from '../principal.js';

/** Rows per call of the API, and per transaction of the CLI. */
export const IMPORT_BATCH_SIZE = 1000;

export type ImportStatus = 'created' | 'conflict' | 'invalid';

/** What became of one row: `row` counts from 1 (the CLI's line in the file). */
export interface ImportResult {
  row: number;
  /** Normalized when valid; as given when not; null when the row has none. */
  email: string | null;
  status: ImportStatus;
  reason?: string;
}

/** A row to import, as read: nothing about it is trusted yet. */
export interface ImportRow {
  /** Its position, from 1. */
  row: number;
  value: unknown;
}

const FIELDS = new Set(['email', 'name', 'password_hash', 'role', 'email_verified']);
const MAX_NAME_LENGTH = 100;
// The contract's Name rule (its pattern and `x-trimmed: single-line`): a visible character, and no
// control, bidirectional-override or line-separator characters but the white space trimming removes.
/* eslint-disable no-control-regex -- matching control characters is the point: they are refused */
const NAME =
  /^\s*[^\s\x00-\x1F\x7F-\x9F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069](?:[^\x00-\x1F\x7F-\x9F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\u2028\u2029]*[^\s\x00-\x1F\x7F-\x9F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069])?\s*$/;
/* eslint-enable no-control-regex */

type Checked = { ok: true; email: string; user: NewUserRow } | { ok: false; email: string | null; reason: string };

/** A row's values checked one by one, the first problem named: the same rules as the rest of the API. */
export function checkImportRow(value: unknown): Checked {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, email: null, reason: 'the row is not a JSON object' };
  const row = value as Record<string, unknown>;
  const given = typeof row.email === 'string' ? row.email : null;
  const invalid = (reason: string): Checked => ({ ok: false, email: given, reason });
  const unknown = Object.keys(row).find((key) => !FIELDS.has(key));
  if (unknown !== undefined) return invalid(`unknown field "${unknown}" (expected email, name, password_hash, role, email_verified)`);
  if (given === null) return invalid('email is required and must be a string');
  if (!isEmailAddress(given)) return invalid('email is not an e-mail address');
  const email = normalizeEmail(given);
  const bad = (reason: string): Checked => ({ ok: false, email, reason });
  if (typeof row.name !== 'string') return bad('name is required and must be a string');
  const name = row.name.trim();
  if (!NAME.test(row.name) || [...name].length > MAX_NAME_LENGTH) {
    return bad(`name must be 1 to ${MAX_NAME_LENGTH} characters with a visible one, and no control or bidirectional-override characters`);
  }
  if (typeof row.password_hash !== 'string') return bad('password_hash is required and must be a string');
  const hashProblem = importProblem(row.password_hash);
  if (hashProblem !== undefined) return bad(hashProblem);
  const role = row.role ?? 'user';
  if (role !== 'user' && role !== 'admin') return bad('role must be user or admin');
  const verified = row.email_verified ?? false;
  if (typeof verified !== 'boolean') return bad('email_verified must be true or false');
  return { ok: true, email, user: { email, name, password_hash: row.password_hash, role, email_verified: verified } };
}

/** Users brought from another system with the password hashes it stored. */
export class UserImport {
  constructor(private readonly transact: Transact) {}

  /**
   * An admin's import of up to IMPORT_BATCH_SIZE rows (the contract bounds the request). A hash
   * dearer than IMPORT_HASH_CAPS refuses the whole request (422 on each such row's field), not
   * only its row: it is an attempt on the hashing pool or a mistake in the export, and nothing is
   * written.
   */
  async importUsers(principal: Principal, users: unknown[]): Promise<ImportResult[]> {
    requireAdmin(principal);
    const tooDear = users.flatMap((value, index) => {
      const hash = (value as { password_hash?: unknown } | null)?.password_hash;
      const problem = typeof hash === 'string' ? beyondCaps(hash) : undefined;
      return problem === undefined ? [] : [{ field: `body.users.${index}.password_hash`, message: problem }];
    });
    if (tooDear.length > 0) throw new Validation(tooDear);
    return this.importBatch(
      principal.client,
      principal.user.id,
      users.map((value, index) => ({ row: index + 1, value })),
      'import',
    );
  }

  /**
   * Checks each row and inserts the valid ones in one transaction, with a `user.created` event each.
   * Rows are independent: one that is invalid or taken is reported and the others go in. `actor` is
   * the admin who imports, or null (the CLI), and `source` says which.
   */
  async importBatch(origin: RequestOrigin, actor: number | null, rows: ImportRow[], source: string): Promise<ImportResult[]> {
    const results: ImportResult[] = [];
    const toInsert: NewUserRow[] = [];
    const pending = new Map<string, ImportResult>();
    for (const { row, value } of rows) {
      const checked = checkImportRow(value);
      if (!checked.ok) {
        results.push({ row, email: checked.email, status: 'invalid', reason: checked.reason });
      } else if (pending.has(checked.email)) {
        // The first row with an address wins, as it would have in separate imports.
        results.push({ row, email: checked.email, status: 'conflict' });
      } else {
        const result: ImportResult = { row, email: checked.email, status: 'conflict' };
        pending.set(checked.email, result);
        toInsert.push(checked.user);
        results.push(result);
      }
    }
    if (toInsert.length === 0) return results;
    await this.transact(async (trx) => {
      const created = await insertImportedUsers(trx, toInsert);
      for (const user of created) {
        const result = pending.get(user.email);
        if (result) result.status = 'created';
      }
      await recordEvents(
        trx,
        created.map((user) => ({
          type: 'user.created',
          actor,
          subject: user.id,
          details: { role: user.role, is_active: user.is_active, source },
          origin,
        })),
      );
    });
    return results;
  }
}

/** How many rows ended in each status. */
export function countByStatus(results: readonly ImportResult[]): Record<ImportStatus, number> {
  const counts: Record<ImportStatus, number> = { created: 0, conflict: 0, invalid: 0 };
  for (const result of results) counts[result.status]++;
  return counts;
}
