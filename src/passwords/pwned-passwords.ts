import { createHash } from 'node:crypto';
import type { PwnedPasswordsConfig } from '../config/index.js';

/**
 * A client of the Pwned Passwords range API (k-anonymity): only the first five hex characters of the
 * password's SHA-1 are sent, and the answer lists every breached hash with that prefix, padded with
 * decoys (count 0) so that its size tells nothing either. The password and the rest of its hash
 * never leave the process.
 */
export class PwnedPasswordsRange {
  constructor(private readonly options: Pick<PwnedPasswordsConfig, 'url' | 'timeoutMs'>) {}

  /** How often the password appears in known breaches (0: never); throws when the API does not answer in time. */
  async breachCount(password: string): Promise<number> {
    const sha1 = createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
    const [prefix, suffix] = [sha1.slice(0, 5), sha1.slice(5)];
    const response = await fetch(`${this.options.url.replace(/\/*$/, '/')}${prefix}`, {
      headers: { 'Add-Padding': 'true', 'User-Agent': 'account-service' },
      signal: AbortSignal.timeout(this.options.timeoutMs),
    });
    if (!response.ok) throw new Error(`the range API answered ${response.status}`);
    const body = await response.text();
    for (const line of body.split('\n')) {
      const [candidate, count] = line.trim().split(':');
      if (candidate?.toUpperCase() === suffix) return Number(count) || 0;
    }
    return 0;
  }
}
