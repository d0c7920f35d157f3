import { Secret } from 'otpauth';
import { sha256 } from '../sessions/tokens.js';

export const RECOVERY_CODE_COUNT = 10;

/** 80 random bits each, written as 16 base32 characters in groups of four. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => new Secret({ size: 10 }).base32.match(/.{4}/g)!.join('-'));
}

/** What is stored: the hash of the code, case, spaces and dashes aside (people retype them). */
export function recoveryCodeHash(code: string): string {
  return sha256(`recovery-code\n${code.toUpperCase().replace(/[\s-]+/g, '')}`);
}
