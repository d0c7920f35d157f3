import type { Kysely } from 'kysely';
import { recordEmailCodeFailure, useEmailCode } from './code-repository.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database, EmailCodeRow } from '../db/types.js';
import { findUserByEmail } from '../users/user-repository.js';
import { InvalidCode } from '../errors.js';
import { recordEvent } from '../audit/audit-events.js';
import { countedCheck, type LoginGuard } from '../sessions/login-guard.js';
import type { ClientInfo } from '../principal.js';
import { codeMatches, type EmailCodeDigest } from './codes.js';

/** Wrong codes that void the code of an address. */
export const EMAIL_CODE_MAX_FAILURES = 5;

export interface CodeAttempt {
  /** The address the code went to (the account lockout's key). */
  email: string;
  code: string;
  /** The live code the attempt is at, locked for the transaction. */
  find: (trx: UnitOfWork) => Promise<EmailCodeRow | undefined>;
  /** What the audit trail's `login.failed` says was tried (`email_code`, `provider`). */
  method: string;
  client: ClientInfo;
}

/**
 * One counted attempt at an e-mailed code, as a password is: the attempt is taken before the code
 * is compared, so parallel guesses stay within the lockout, and the fifth wrong code voids the
 * code. Returns the spent code; a wrong one is a failed login and an InvalidCode.
 */
export async function spendCountedCode(
  parts: { db: Kysely<Database>; transact: Transact; loginGuard?: LoginGuard },
  digest: EmailCodeDigest,
  attempt: CodeAttempt,
): Promise<EmailCodeRow> {
  const { transact } = parts;
  const { email, code, client } = attempt;
  let spent: EmailCodeRow | undefined;
  let tried: EmailCodeRow | undefined;
  const { valid, locked } = await countedCheck(parts.loginGuard, email, client.ip, () =>
    transact(async (trx) => {
      tried = await attempt.find(trx);
      if (!codeMatches(tried?.code_hash, digest.of(email, code))) {
        if (tried) await recordEmailCodeFailure(trx, tried.id, EMAIL_CODE_MAX_FAILURES);
        return false;
      }
      spent = tried;
      return useEmailCode(trx, tried!.id);
    }),
  );
  if (valid && spent) return spent;
  // The account the attempt was at, when one has the address, as for a wrong password.
  const subject = tried?.user_id ?? (email ? (await findUserByEmail(parts.db, email))?.id : undefined) ?? null;
  await transact(async (trx) => {
    await recordEvent(trx, {
      type: 'login.failed',
      actor: null,
      subject,
      details: { reason: 'invalid_code', method: attempt.method },
      origin: client,
    });
    if (locked) await recordEvent(trx, { type: 'login.locked', actor: null, subject, details: { scope: locked }, origin: client });
  });
  throw new InvalidCode();
}
