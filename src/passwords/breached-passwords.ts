import { Validation } from '../errors.js';
import type { PwnedPasswordsRange } from './pwned-passwords.js';
import type { Logger } from '../logger.js';

/**
 * PWNED_PASSWORDS_CHECK: a new password found in known breaches is refused. A range API that is
 * slow or failing never blocks anyone: the password goes through, and the miss is logged and counted.
 */
export class BreachedPasswords {
  constructor(
    private readonly range: Pick<PwnedPasswordsRange, 'breachCount'>,
    private readonly logger: Logger,
    /** Told each check that could not be made (for metrics). */
    private readonly onUnavailable: () => void = () => {},
  ) {}

  /** Throws a validation error on `field` when `password` is known from a breach. */
  async refuse(password: string, field: string): Promise<void> {
    let count: number;
    try {
      count = await this.range.breachCount(password);
    } catch (error) {
      this.onUnavailable();
      this.logger.warn(
        { err: error },
        'pwned passwords: the range API failed or did not answer in time; the password was let through unchecked',
      );
      return;
    }
    if (count > 0) throw new Validation([{ field, message: 'has appeared in a data breach; choose another' }]);
  }
}
