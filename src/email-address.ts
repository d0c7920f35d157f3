/**
 * Whether `value` looks like an e-mail address: something, an @, and a domain with a dot, no spaces.
 * Deliberately loose: the address is proven by the mail sent to it, not by its spelling.
 */
export function isEmailAddress(value: string): boolean {
  return /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value);
}
