import { countRecoveryCodes, listConfirmedFactors, takeTotpStep, useRecoveryCode } from './factor-repository.js';
import type { UnitOfWork } from '../db/transaction.js';
import { recordEvent } from '../audit/audit-events.js';
import type { ClientInfo } from '../principal.js';
import { recoveryCodeHash } from './recovery-codes.js';
import type { TotpCodes } from './totp.js';

/**
 * Takes a current code of one of the user's confirmed TOTP apps: the factor's id, or undefined for a
 * wrong code or one whose 30-second step was taken already (a code is good once).
 */
export async function takeTotpCode(
  trx: UnitOfWork,
  totp: TotpCodes,
  userId: number,
  code: string,
  now: number,
): Promise<number | undefined> {
  for (const factor of await listConfirmedFactors(trx, userId, 'totp')) {
    const taken = totp.stepOf(factor.totp_secret_sealed!, code, now);
    if (taken !== undefined && (await takeTotpStep(trx, factor.id, taken))) return factor.id;
  }
  return undefined;
}

/** Spends one of the user's unused recovery codes and records it: the codes left, or undefined for a wrong or used one. */
export async function spendRecoveryCode(trx: UnitOfWork, userId: number, code: string, client: ClientInfo): Promise<number | undefined> {
  if (!(await useRecoveryCode(trx, userId, recoveryCodeHash(code)))) return undefined;
  const remaining = await countRecoveryCodes(trx, userId);
  await recordEvent(trx, { type: 'mfa.recovery_code_used', actor: userId, subject: userId, details: { remaining }, origin: client });
  return remaining;
}
