import { Secret, TOTP } from 'otpauth';
import type { TotpConfig } from '../config/index.js';
import { UnreadableSecret } from '../errors.js';
import { deriveKey, seal, unseal } from '../infra/sealed.js';

/** RFC 6238 as every authenticator app reads it: SHA-1, 6 digits, 30-second steps. */
const ALGORITHM = 'SHA1';
const DIGITS = 6;
const PERIOD_SECONDS = 30;
/** Steps of clock drift accepted either way. */
const DRIFT_STEPS = 1;
/** 160 bits, the HMAC-SHA1 key size RFC 4226 recommends. */
const SECRET_BYTES = 20;

/**
 * TOTP secrets and codes. Secrets are kept sealed with a key derived from SECRET_KEY for this
 * purpose only; the clear secret exists in memory while a code is checked, and is shown once.
 */
export class TotpCodes {
  private readonly key: Buffer;

  constructor(
    private readonly config: TotpConfig,
    secretKey: string,
  ) {
    this.key = deriveKey(secretKey, 'mfa-totp-secret');
  }

  /** A new secret: base32 for the user, sealed for the database. */
  newSecret(): { base32: string; sealed: string } {
    const base32 = new Secret({ size: SECRET_BYTES }).base32;
    return { base32, sealed: seal(this.key, base32) };
  }

  /** The key URI apps read from a QR code: issuer, account and secret. */
  url(base32: string, account: string): string {
    return this.totp(base32, account).toString();
  }

  /**
   * The time step `code` belongs to, within one step of drift around `nowMs`; undefined for a
   * wrong code. A secret that does not unseal is the service's fault, not the code's: UnreadableSecret.
   * The caller makes sure each step is taken once.
   */
  stepOf(sealedSecret: string, code: string, nowMs: number): number | undefined {
    const base32 = unseal(this.key, sealedSecret);
    if (base32 === undefined) throw new UnreadableSecret('a TOTP secret');
    if (!/^\d{6}$/.test(code)) return undefined;
    const totp = this.totp(base32, '');
    const delta = totp.validate({ token: code, timestamp: nowMs, window: DRIFT_STEPS });
    return delta === null ? undefined : totp.counter({ timestamp: nowMs }) + delta;
  }

  private totp(base32: string, account: string): TOTP {
    return new TOTP({
      issuer: this.config.issuer,
      label: account,
      secret: Secret.fromBase32(base32),
      algorithm: ALGORITHM,
      digits: DIGITS,
      period: PERIOD_SECONDS,
    });
  }
}
