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
 * The key ID tokens are signed with: the configured one, or (development only; production refuses
 * to start without one) the key this database keeps, sealed under SECRET_KEY, made the first time
 * the provider is used, so that it is the same after a restart. A key sealed under another
 * SECRET_KEY is passed over.
 */
export class SigningKeys {
  private readonly sealing: Buffer;
  private found: SigningKey | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    config: OidcConfig,
    secret: string,
  ) {
    this.sealing = deriveKey(secret, 'oidc-signing-key');
    this.found = config.signingKey;
  }

  /** The key, once there is one; never makes one. */
  async current(): Promise<SigningKey | undefined> {
    if (this.found) return this.found;
    for (const row of await listOidcKeys(this.db)) {
      const pem = unseal(this.sealing, row.private_key_sealed);
      if (pem !== undefined && (row.algorithm === 'RS256' || row.algorithm === 'ES256')) {
        this.found = { key: createPrivateKey(pem), algorithm: row.algorithm };
        return this.found;
      }
    }
    return undefined;
  }

  /** The key, made and kept when there is none yet. */
  async ensure(): Promise<SigningKey> {
    const current = await this.current();
    if (current) return current;
    const { privateKey } = await generate('rsa', { modulusLength: 2048 });
    await insertOidcKey(this.db, 'RS256', seal(this.sealing, privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()));
    // When two processes made one at once, both take the one kept first.
    return (await this.current())!;
  }
}
