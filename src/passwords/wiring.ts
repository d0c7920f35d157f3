import type { Core } from '../wiring/core.js';
import { BreachedPasswords } from './breached-passwords.js';
import { PwnedPasswordsRange } from './pwned-passwords.js';

/** The breached-password check, when PWNED_PASSWORDS_ENABLED; undefined otherwise. */
export function breachedPasswords(core: Pick<Core, 'config' | 'logger' | 'metrics'>): BreachedPasswords | undefined {
  const { config, logger, metrics } = core;
  if (!config.passwords.pwnedPasswords.enabled) return undefined;
  return new BreachedPasswords(
    new PwnedPasswordsRange(config.passwords.pwnedPasswords),
    logger,
    metrics && (() => metrics.countPwnedPasswordsUnavailable()),
  );
}
