import { Validation } from './errors.js';

/**
 * The service's one e-mail rule: the contract's `email` format (checked by the HTTP layer), and the
 * check of addresses that come from elsewhere (ADMIN_EMAIL, the command line, an imported user), so
 * that any account made outside a request can still sign in through the API.
 */
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

/** The longest address the contract accepts. */
export const MAX_EMAIL_LENGTH = 254;

/** True for an address the API would accept; surrounding white space aside, since addresses are stored trimmed. */
export function isEmailAddress(value: string): boolean {
  const trimmed = value.trim();
  return trimmed.length <= MAX_EMAIL_LENGTH && EMAIL.test(trimmed);
}

/**
 * An address as stored and compared: trimmed, ASCII letters lower-cased, nothing else folded. A
 * full Unicode lower-casing would turn the Kelvin sign into `k` and so map another spelling onto
 * an existing account; such addresses are refused instead (`hasAsciiLookalike`).
 */
export function normalizeEmail(email: string): string {
  return email.trim().replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

// Any ASCII character: what a lookalike turns into.
// eslint-disable-next-line no-control-regex -- the whole ASCII range, control characters included
const ASCII = /[\x00-\x7F]/;

/**
 * True when the value holds a character that Unicode case mapping or NFKC would turn into ASCII:
 * the Kelvin sign (to `k`), the long s (to `s`), fullwidth letters and digits, ligatures such as
 * `ﬁ`, the dotted capital I. An address holding one is malformed, never another spelling of an
 * ASCII address.
 */
export function hasAsciiLookalike(value: string): boolean {
  for (const char of value) {
    if (char.codePointAt(0)! < 0x80) continue;
    const nfkc = char.normalize('NFKC');
    if ([nfkc, char.toLowerCase(), char.toUpperCase(), nfkc.toLowerCase(), nfkc.toUpperCase()].some((mapped) => ASCII.test(mapped)))
      return true;
  }
  return false;
}

/** What a request is told of an address with a lookalike character, on its field. */
export const ASCII_LOOKALIKE_MESSAGE =
  'must not hold characters that Unicode case folding or NFKC turn into ASCII (the Kelvin sign, the long s, fullwidth letters): write the address in ASCII';

/** An address a request sent, as stored; one with a lookalike character is a 422 on `field`. */
export function requestedEmail(email: string, field: string): string {
  if (hasAsciiLookalike(email)) throw new Validation([{ field, message: ASCII_LOOKALIKE_MESSAGE }]);
  return normalizeEmail(email);
}
