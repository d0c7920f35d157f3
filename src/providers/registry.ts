import type { Kysely } from 'kysely';
import type { AuditDetails } from '../audit/audit-repository.js';
import {
  deleteProvider,
  findProvider,
  insertProvider,
  listProviders,
  updateProvider,
  type IdentityProviderRow,
  type ProviderSettings,
} from './provider-repository.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import { Conflict, NotFound, UnreadableSecret } from '../errors.js';
import { deriveKey, seal, unseal } from '../infra/sealed.js';
import { recordEvent, type AuditEventType } from '../audit/audit-events.js';
import { requireAdmin, type Principal } from '../principal.js';
import { check, checkAddresses, settingsOf, withOpenId, type ProviderInput } from './settings.js';

export type ProviderChanges = Partial<Omit<ProviderInput, 'slug' | 'kind'>>;

/** The key that seals providers' client secrets, derived from SECRET_KEY for this purpose alone. */
export function providerSealingKey(secretKey: string): Buffer {
  return deriveKey(secretKey, 'identity-provider-client-secret');
}

/**
 * The upstream providers as admins register them: presets filled in, settings checked, the client
 * secret sealed at rest and never shown again.
 */
export class IdentityProviderRegistry {
  private readonly key: Buffer;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    /** SECRET_KEY, from which the key that seals client secrets is derived. */
    secretKey: string,
    /** PROVIDER_ALLOW_PRIVATE_URLS: whether a provider's URLs may name internal addresses. */
    private readonly allowPrivateUrls: boolean,
  ) {
    this.key = providerSealingKey(secretKey);
  }

  async list(principal: Principal): Promise<IdentityProviderRow[]> {
    requireAdmin(principal);
    return listProviders(this.db);
  }

  /** The providers a sign-in page offers. */
  enabled(): Promise<IdentityProviderRow[]> {
    return listProviders(this.db, { enabledOnly: true });
  }

  async create(principal: Principal, input: ProviderInput): Promise<IdentityProviderRow> {
    requireAdmin(principal);
    const settings: ProviderSettings = {
      ...settingsOf(input, this.allowPrivateUrls),
      client_secret_sealed: input.client_secret ? seal(this.key, input.client_secret) : null,
    };
    await checkAddresses(settings, this.allowPrivateUrls);
    return this.transact(async (trx) => {
      const row = await insertProvider(trx, settings);
      if (!row) throw new Conflict('An identity provider with this slug already exists');
      await recordAdminEvent(trx, principal, 'identity_provider.created', { provider: row.slug, kind: row.kind });
      return row;
    });
  }

  async get(principal: Principal, slug: string): Promise<IdentityProviderRow> {
    requireAdmin(principal);
    return found(await findProvider(this.db, slug));
  }

  async update(principal: Principal, slug: string, patch: ProviderChanges): Promise<IdentityProviderRow> {
    requireAdmin(principal);
    // Only the URLs sent are new; the others were checked when they were saved.
    await checkAddresses(patch, this.allowPrivateUrls);
    return this.transact(async (trx) => {
      const current = found(await findProvider(trx, slug));
      const { client_secret: secret, claims, scopes, ...rest } = patch;
      const changes: Partial<ProviderSettings> = { ...rest };
      if (claims) changes.claims = { ...current.claims, ...claims };
      if (scopes) changes.scopes = withOpenId(current.kind, scopes);
      if (secret !== undefined) changes.client_secret_sealed = secret === null ? null : seal(this.key, secret);
      const { client_secret_sealed: _sealed, ...merged } = { ...current, ...changes };
      check(merged, this.allowPrivateUrls);
      const row = found(await updateProvider(trx, slug, changes));
      await recordAdminEvent(trx, principal, 'identity_provider.updated', { provider: slug, fields: Object.keys(patch) });
      return row;
    });
  }

  async remove(principal: Principal, slug: string): Promise<void> {
    requireAdmin(principal);
    await this.transact(async (trx) => {
      if (!(await deleteProvider(trx, slug))) throw new NotFound('Identity provider not found');
      await recordAdminEvent(trx, principal, 'identity_provider.deleted', { provider: slug });
    });
  }

  /** The provider's client secret in clear, for its token requests; undefined for a public client. */
  clientSecret(row: IdentityProviderRow): string | undefined {
    if (row.client_secret_sealed === null) return undefined;
    const secret = unseal(this.key, row.client_secret_sealed);
    if (secret === undefined) throw new UnreadableSecret(`the client secret of the identity provider ${row.slug}`);
    return secret;
  }
}

/** An admin's change to the providers: about no account, so without a subject. */
function recordAdminEvent(trx: UnitOfWork, principal: Principal, type: AuditEventType, details: AuditDetails): Promise<void> {
  return recordEvent(trx, { type, actor: principal.user.id, subject: null, details, origin: principal.client });
}

function found(row: IdentityProviderRow | undefined): IdentityProviderRow {
  if (row === undefined) throw new NotFound('Identity provider not found');
  return row;
}
