import { randomBytes } from 'node:crypto';
import { sha256 } from '../sessions/tokens.js';

/**
 * API keys: `ask_`, 32 random bytes in base64url (43 characters), and the CRC32 of those 43
 * characters as base64url (6 characters), like GitHub's tokens: secret scanners recognise a key by
 * its shape and checksum, and a mistyped or truncated key is refused without a database query.
 */
export const API_KEY_PREFIX = 'ask_';
const RANDOM_BYTES = 32;
const SHAPE = /^ask_([A-Za-z0-9_-]{43})([A-Za-z0-9_-]{6})$/;
/** How much of a key lists show: the prefix and 8 random characters, enough to tell keys apart. */
const SHOWN_LENGTH = API_KEY_PREFIX.length + 8;

export interface NewKey {
  key: string;
  prefix: string;
  hash: string;
}

export function newApiKey(): NewKey {
  const random = randomBytes(RANDOM_BYTES).toString('base64url');
  const key = `${API_KEY_PREFIX}${random}${checksum(random)}`;
  return { key, prefix: key.slice(0, SHOWN_LENGTH), hash: sha256(key) };
}

/** Whether a bearer token is meant as an API key (rather than an access token). */
export const isApiKey = (token: string): boolean => token.startsWith(API_KEY_PREFIX);

/** Whether the key has the shape and checksum of one this service made. */
export function isWellFormedApiKey(key: string): boolean {
  const parts = SHAPE.exec(key);
  return parts !== null && checksum(parts[1]) === parts[2];
}

function checksum(random: string): string {
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.from(random, 'latin1')));
  return crc.toString('base64url');
}

/** CRC-32 (IEEE 802.3, as zlib and GitHub's tokens compute it); zlib.crc32 is not in every Node 20. */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
