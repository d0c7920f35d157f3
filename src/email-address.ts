/**
 * The e-mail rule of the API's `email` format (an address the contract accepts), for code that
 * checks addresses outside a request: an imported user must be able to sign in through the API.
 */
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

/** The longest address the contract accepts. */
export const MAX_EMAIL_LENGTH = 254;

/** True for an address the API would accept, surrounding white space aside. */
export function isEmailAddress(value: string): boolean {
  const trimmed = value.trim();
  return trimmed.length <= MAX_EMAIL_LENGTH && EMAIL.test(trimmed);
}
