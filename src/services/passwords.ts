import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/bcrypt';
import { dictionary } from '@zxcvbn-ts/language-common';
import { validationError } from '../http/errors';

/** bcrypt reads at most 72 bytes; longer passwords are refused rather than silently cut. */
export const MAX_PASSWORD_BYTES = 72;

/** Hashes on libuv's thread pool, off the event loop. */
export function hashPassword(password: string, cost: number): Promise<string> {
  return hash(password, { cost });
}

const dummyHashes = new Map<number, Promise<string>>();

/**
 * A hash of a random password at `cost`, made once: checking a password against it costs what a
 * real check costs, so a login for an unknown account takes as long as one with a wrong password.
 */
export function dummyHash(cost: number): Promise<string> {
  let dummy = dummyHashes.get(cost);
  if (!dummy) {
    dummy = hash(randomBytes(18).toString('base64url'), { cost });
    dummyHashes.set(cost, dummy);
  }
  return dummy;
}

/**
 * True only for the right password. Without a hash (no such account), or for a password bcrypt
 * could never have hashed, it does the same work against a dummy hash and says false.
 */
export async function verifyPassword(password: string, passwordHash: string | undefined, cost: number): Promise<boolean> {
  const bytes = Buffer.from(password, 'utf8');
  if (passwordHash !== undefined && bytes.length <= MAX_PASSWORD_BYTES) return verify(bytes, passwordHash);
  await verify(bytes.subarray(0, MAX_PASSWORD_BYTES), await dummyHash(cost));
  return false;
}

/** Shorter passwords fail the contract's schema before they get here. */
export const MIN_PASSWORD_LENGTH = 8;

/**
 * Common passwords, lower-cased: the entries of at least MIN_PASSWORD_LENGTH characters of the
 * list of about 49,000 most used passwords that ships with @zxcvbn-ts/language-common. Built once,
 * when the service starts.
 */
export const COMMON_PASSWORDS: ReadonlySet<string> = new Set(
  dictionary['passwords-common'].filter((entry) => entry.length >= MIN_PASSWORD_LENGTH).map((entry) => entry.toLowerCase()),
);

/** True for a password on the common list, whatever its case and surrounding spaces. */
export function isCommonPassword(password: string): boolean {
  const lower = password.toLowerCase();
  return COMMON_PASSWORDS.has(lower) || COMMON_PASSWORDS.has(lower.trim());
}

/** Refuses, as a validation error on `field`, a password over bcrypt's input limit. */
export function assertPasswordFits(password: string | undefined, field: string): void {
  if (password === undefined || Buffer.byteLength(password, 'utf8') <= MAX_PASSWORD_BYTES) return;
  throw validationError([{ field, message: `must NOT be longer than ${MAX_PASSWORD_BYTES} bytes of UTF-8` }]);
}

/**
 * Every rule a new password must meet beyond the schema, as a validation error on `field`: at most
 * 72 bytes, not a common password, and not the account's e-mail address (`email`, when known).
 */
export function checkNewPassword(password: string | undefined, field: string, email?: string): void {
  if (password === undefined) return;
  assertPasswordFits(password, field);
  if (isCommonPassword(password)) throw validationError([{ field, message: 'is too common' }]);
  if (email !== undefined) checkNotEmail(password, email, field);
}

/** The e-mail rule alone, for callers that learn the account's address after the other checks. */
export function checkNotEmail(password: string | undefined, email: string, field: string): void {
  if (password !== undefined && password.trim().toLowerCase() === email.trim().toLowerCase()) {
    throw validationError([{ field, message: 'must not be the same as the e-mail address' }]);
  }
}
