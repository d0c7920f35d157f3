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
