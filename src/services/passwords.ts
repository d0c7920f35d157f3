import { hash, verify } from '@node-rs/bcrypt';
import { validationError } from '../http/errors';

/** bcrypt reads at most 72 bytes; longer passwords are refused rather than silently cut. */
export const MAX_PASSWORD_BYTES = 72;

/** Hashes on libuv's thread pool, off the event loop. */
export function hashPassword(password: string, cost: number): Promise<string> {
  return hash(password, { cost });
}

/** False for a wrong password, and for one bcrypt could never have hashed. */
export async function verifyPassword(password: string, passwordHash: string): Promise<boolean> {
  if (Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES) return false;
  return verify(password, passwordHash);
}

/** Refuses, as a validation error on `field`, a password over bcrypt's input limit. */
export function assertPasswordFits(password: string | undefined, field: string): void {
  if (password === undefined || Buffer.byteLength(password, 'utf8') <= MAX_PASSWORD_BYTES) return;
  throw validationError([{ field, message: `must NOT be longer than ${MAX_PASSWORD_BYTES} bytes of UTF-8` }]);
}
