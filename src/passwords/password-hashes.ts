import { pbkdf2, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { hash as argon2Hash, verify as argon2Verify, type Algorithm } from '@node-rs/argon2';
import { hash as bcryptHash, verify as bcryptVerify } from '@node-rs/bcrypt';
import type { PasswordConfig } from '../config/index.js';

/** How new hashes are made; a stored hash weaker than this is replaced at the next sign-in. */
export type HashPolicy = Pick<PasswordConfig, 'hashAlgorithm' | 'bcryptCost' | 'argon2MemoryKib' | 'argon2Iterations'>;

/** A stored hash, read: every format the service verifies, with the parameters that set its cost. */
export type ParsedHash =
  | { format: 'bcrypt'; cost: number }
  | { format: 'argon2id' | 'argon2i'; memoryKib: number; iterations: number; parallelism: number }
  | { format: 'pbkdf2_sha256'; iterations: number; salt: string; derived: Buffer };

/**
 * The dearest hash an import may bring, per format: a stored hash is checked on the shared hashing
 * pool at every sign-in, wrong passwords included, so one with absurd parameters would hold a slot
 * (and its memory) for seconds and delay everyone else's sign-in.
 */
export const IMPORT_HASH_CAPS = {
  bcryptCost: 15,
  argon2MemoryKib: 256 * 1024,
  argon2Iterations: 10,
  argon2Parallelism: 8,
  pbkdf2Iterations: 10_000_000,
} as const;

// $2a$ (the original), $2b$ (OpenBSD's fix for long passwords) and $2y$ (crypt_blowfish's name for the
// same fix) are one algorithm for passwords of at most 72 bytes, which is all the service accepts.
const BCRYPT = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/;
// The reference implementation writes m,t,p; others (node-argon2) write them in another order.
const ARGON2 = /^\$(argon2id|argon2i)\$v=19\$([mtp]=\d{1,10},[mtp]=\d{1,10},[mtp]=\d{1,10})\$[A-Za-z0-9+/]{11,}\$[A-Za-z0-9+/]{16,}$/;
// Django: pbkdf2_sha256$<iterations>$<salt>$<base64 of the 32-byte derived key>; its salts are ASCII without '$'.
const DJANGO_PBKDF2 = /^pbkdf2_sha256\$(\d{1,9})\$([\x21-\x23\x25-\x7e]{1,128})\$([A-Za-z0-9+/]{43}=)$/;

/** The hash read, or undefined when it is in no format the service knows or its numbers make no sense. */
export function parseHash(stored: string): ParsedHash | undefined {
  let match = BCRYPT.exec(stored);
  if (match) {
    const cost = Number(match[1]);
    return cost >= 4 && cost <= 31 ? { format: 'bcrypt', cost } : undefined;
  }
  match = ARGON2.exec(stored);
  if (match) {
    const params = new Map(match[2].split(',').map((pair) => [pair[0], Number(pair.slice(2))]));
    const [memoryKib, iterations, parallelism] = [params.get('m'), params.get('t'), params.get('p')];
    if (memoryKib === undefined || iterations === undefined || parallelism === undefined) return undefined;
    if (iterations < 1 || parallelism < 1 || parallelism > 255 || memoryKib < 8 * parallelism) return undefined;
    return { format: match[1] as 'argon2id' | 'argon2i', memoryKib, iterations, parallelism };
  }
  match = DJANGO_PBKDF2.exec(stored);
  if (match) {
    const iterations = Number(match[1]);
    return iterations >= 1 ? { format: 'pbkdf2_sha256', iterations, salt: match[2], derived: Buffer.from(match[3], 'base64') } : undefined;
  }
  return undefined;
}

/** Why a hash cannot be imported, in words for the import's per-row reason; undefined when it can. */
export function importProblem(stored: string): string | undefined {
  if (!parseHash(stored)) {
    return 'password_hash is in an unknown format (bcrypt $2a$/$2b$/$2y$, $argon2id$ or $argon2i$ v=19, or pbkdf2_sha256$ as Django writes it)';
  }
  return beyondCaps(stored);
}

/** Which of IMPORT_HASH_CAPS a hash in a known format exceeds, in words; undefined when none (or the format is unknown). */
export function beyondCaps(stored: string): string | undefined {
  const parsed = parseHash(stored);
  const caps = IMPORT_HASH_CAPS;
  switch (parsed?.format) {
    case undefined:
      return undefined;
    case 'bcrypt':
      return parsed.cost > caps.bcryptCost ? `password_hash has a bcrypt cost above ${caps.bcryptCost}` : undefined;
    case 'argon2id':
    case 'argon2i':
      if (parsed.memoryKib > caps.argon2MemoryKib) return `password_hash uses more than ${caps.argon2MemoryKib} KiB (256 MiB) of memory`;
      if (parsed.iterations > caps.argon2Iterations) return `password_hash has more than ${caps.argon2Iterations} iterations`;
      if (parsed.parallelism > caps.argon2Parallelism) return `password_hash has a parallelism above ${caps.argon2Parallelism}`;
      return undefined;
    case 'pbkdf2_sha256':
      return parsed.iterations > caps.pbkdf2Iterations ? `password_hash has more than ${caps.pbkdf2Iterations} iterations` : undefined;
  }
}

// @node-rs/argon2 declares its algorithms as a const enum, which a per-file compiler cannot inline.
const ARGON2ID = 2 as Algorithm;

/** A new hash of `password` as the policy says; runs on libuv's thread pool. */
export function makeHash(password: string | Buffer, policy: HashPolicy): Promise<string> {
  if (policy.hashAlgorithm === 'bcrypt') return bcryptHash(password, policy.bcryptCost);
  return argon2Hash(password, {
    algorithm: ARGON2ID,
    memoryCost: policy.argon2MemoryKib,
    timeCost: policy.argon2Iterations,
    parallelism: 1,
  });
}

const pbkdf2Async = promisify(pbkdf2);

/** True when `password` matches the stored hash; false for a wrong password or a hash in no known format. */
export async function verifyHash(password: Buffer, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (!parsed) return false;
  switch (parsed.format) {
    case 'bcrypt':
      return bcryptVerify(password, stored);
    case 'argon2id':
    case 'argon2i':
      return argon2Verify(stored, password);
    case 'pbkdf2_sha256': {
      // Django derives from the salt as text, and so does Node: both read it as UTF-8 bytes.
      const derived = await pbkdf2Async(password, parsed.salt, parsed.iterations, parsed.derived.length, 'sha256');
      return timingSafeEqual(derived, parsed.derived);
    }
  }
}

/** True when a hash that just verified should be replaced: another algorithm, or a lower cost than the policy's. */
export function needsRehash(stored: string, policy: HashPolicy): boolean {
  const parsed = parseHash(stored);
  if (!parsed) return true;
  if (policy.hashAlgorithm === 'bcrypt') return parsed.format !== 'bcrypt' || parsed.cost < policy.bcryptCost;
  return parsed.format !== 'argon2id' || parsed.memoryKib < policy.argon2MemoryKib || parsed.iterations < policy.argon2Iterations;
}
