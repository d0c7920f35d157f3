import { createPrivateKey, generateKeyPair, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import type { AsymmetricAlgorithm, OidcConfig } from '../config/index.js';
import { insertOidcKey, listOidcKeys } from './key-repository.js';
import type { Database } from '../db/types.js';
import { deriveKey, seal, unseal } from '../infra/sealed.js';

export interface SigningKey {
  key: KeyObject;
  algorithm: AsymmetricAlgorithm;
}

const generate = promisify(generateKeyPair);

/**
 * The keys ID tokens are signed with: always one RSA key (RS256, OpenID Connect's default, which
 * clients that name no algorithm expect), and the configured EC key (ES256) beside it when there is
 * one. A key that is not configured is, in development only (production refuses to start without
 * a key, and with an EC key alone signs ES256 only), the one this database keeps, sealed under
 * SECRET_KEY, made the first time the provider is used, so that it is the same after a restart. A
 * key sealed under another SECRET_KEY is passed over.
 */
export class SigningKeys {
  private readonly sealing: Buffer;
  private readonly configured: SigningKey[];
  private readonly makesKeys: boolean;
  private found: SigningKey[] | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    config: OidcConfig,
    secret: string,
  ) {
    this.sealing = deriveKey(secret, 'oidc-signing-key');
    this.configured = [config.signingKey, config.rsaSigningKey && { key: config.rsaSigningKey, algorithm: 'RS256' as const }].filter(
      (key): key is SigningKey => key !== undefined,
    );
    this.makesKeys = config.makesKeys;
  }

  /** The keys, RSA first, once there are all there will be; never makes one. */
  async current(): Promise<SigningKey[] | undefined> {
    if (this.found) return this.found;
    if (!this.needsKept()) return this.configured.length > 0 ? (this.found = this.ordered(this.configured)) : undefined;
    const kept = await this.kept();
    if (!kept) return undefined;
    return (this.found = this.ordered([...this.configured, kept]));
  }

  /** The keys, the RSA key made and kept when there is none yet. */
  async ensure(): Promise<SigningKey[]> {
    const current = await this.current();
    if (current) return current;
    if (!this.makesKeys) throw new Error('the OpenID Connect provider has no signing key, and production makes none');
    const { privateKey } = await generate('rsa', { modulusLength: 2048 });
    await insertOidcKey(this.db, 'RS256', seal(this.sealing, privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()));
    // When two processes made one at once, both take the one kept first.
    return (await this.current())!;
  }

  /** Whether an RSA key must come from the database: none is configured, and keys are made here. */
  private needsKept(): boolean {
    return this.makesKeys && !this.configured.some((key) => key.algorithm === 'RS256');
  }

  /** The RSA key this database keeps, the first that SECRET_KEY unseals. */
  private async kept(): Promise<SigningKey | undefined> {
    for (const row of await listOidcKeys(this.db)) {
      const pem = row.algorithm === 'RS256' ? unseal(this.sealing, row.private_key_sealed) : undefined;
      if (pem !== undefined) return { key: createPrivateKey(pem), algorithm: 'RS256' };
    }
    return undefined;
  }

  private ordered(keys: SigningKey[]): SigningKey[] {
    return [...keys].sort((a, b) => (a.algorithm === b.algorithm ? 0 : a.algorithm === 'RS256' ? -1 : 1));
  }
}
