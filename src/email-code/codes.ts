import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '../infra/sealed.js';

/** A six-digit code, every value equally likely, leading zeros kept. */
export function newCode(): string {
  return randomInt(0, 1_000_000).toString().padStart(6, '0');
}

/**
 * The stored form of a code: an HMAC-SHA-256 under a key derived from SECRET_KEY, over the address
 * and the code. A million codes could be hashed back from a plain digest; without the key they
 * cannot, and the same code sent to two addresses is stored differently.
 */
export class EmailCodeDigest {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = deriveKey(secret, 'email-code');
  }

  of(email: string, code: string): string {
    return createHmac('sha256', this.key).update(`${email}\n${code}`).digest('hex');
  }
}

/** Compares a stored digest with a computed one in constant time; false when nothing is stored. */
export function codeMatches(stored: string | undefined, computed: string): boolean {
  if (stored === undefined || stored.length !== computed.length) return false;
  return timingSafeEqual(Buffer.from(stored), Buffer.from(computed));
}
