import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditDetails } from '../audit/audit-repository.js';
import {
  deleteOauthClient,
  findOauthClient,
  insertOauthClient,
  listOauthClients,
  setOauthClientSecret,
  updateOauthClient,
  type OauthClientRow,
} from './client-repository.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import { NotFound, Validation, type FieldProblem } from '../errors.js';
import { deriveKey, seal } from '../infra/sealed.js';
import { checkResolvesPublic, RefusedAddress, urlProblem } from '../infra/public-addresses.js';
import { recordEvent, type AuditEventType } from '../audit/audit-events.js';
import { requireAdmin, type Principal } from '../principal.js';
import { DEVICE_CODE_GRANT } from './device-flow.js';

export type GrantType = 'authorization_code' | 'refresh_token' | 'client_credentials' | typeof DEVICE_CODE_GRANT | typeof TOKEN_EXCHANGE;

/** RFC 8693's grant: an admin acting as a user (see src/oidc/token-exchange.ts). */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export type Scope = 'openid' | 'profile' | 'email' | 'offline_access';
export type ClientType = 'confidential' | 'public';

export interface ClientInput {
  name: string;
  type: ClientType;
  redirect_uris?: string[];
  post_logout_redirect_uris?: string[];
  grant_types?: GrantType[];
  scopes?: Scope[];
  first_party?: boolean;
  /** Where the provider POSTs a logout token when a session the client took part in ends; null for none. */
  backchannel_logout_uri?: string | null;
  backchannel_logout_session_required?: boolean;
}

export type ClientChanges = Partial<Omit<ClientInput, 'type'>>;

/** A client as the API shows it, with its settings read back from the provider's metadata. */
export interface ClientView {
  client_id: string;
  name: string;
  type: ClientType;
  has_client_secret: boolean;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: GrantType[];
  scopes: Scope[];
  first_party: boolean;
  registered: boolean;
  backchannel_logout_uri: string | null;
  backchannel_logout_session_required: boolean;
  created_at: Date;
  updated_at: Date;
}

const DEFAULT_GRANTS: GrantType[] = ['authorization_code', 'refresh_token'];
const ALL_SCOPES: Scope[] = ['openid', 'profile', 'email', 'offline_access'];
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The key that seals client secrets, derived from SECRET_KEY for this purpose alone (the provider's adapter unseals them). */
export function clientSealingKey(secretKey: string): Buffer {
  return deriveKey(secretKey, 'oauth-client-secret');
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

export function clientView(row: OauthClientRow): ClientView {
  const metadata = row.metadata;
  const scope = typeof metadata.scope === 'string' ? metadata.scope : ALL_SCOPES.join(' ');
  return {
    client_id: row.client_id,
    name: row.name,
    type: row.type,
    has_client_secret: row.client_secret_sealed !== null,
    redirect_uris: strings(metadata.redirect_uris),
    post_logout_redirect_uris: strings(metadata.post_logout_redirect_uris),
    grant_types: strings(metadata.grant_types ?? ['authorization_code']) as GrantType[],
    scopes: scope.split(' ').filter((s) => s !== '') as Scope[],
    first_party: row.first_party,
    registered: row.registered,
    backchannel_logout_uri: typeof metadata.backchannel_logout_uri === 'string' ? metadata.backchannel_logout_uri : null,
    backchannel_logout_session_required: metadata.backchannel_logout_session_required !== false,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** How many addresses a client may list in each of its redirect fields, and how long each may be (as the contract says). */
export const MAX_REDIRECT_URIS = 20;
export const MAX_REDIRECT_URI_LENGTH = 2000;

/**
 * What is wrong with a list of redirect addresses, each problem with the index of the address it is
 * about (undefined for the list as a whole): the rules of every client, whether an admin made it or
 * it registered itself.
 */
export function redirectListProblems(uris: readonly unknown[]): Array<{ index?: number; message: string }> {
  if (uris.length > MAX_REDIRECT_URIS) return [{ message: `may list at most ${MAX_REDIRECT_URIS} addresses` }];
  const problems: Array<{ index?: number; message: string }> = [];
  uris.forEach((uri, index) => {
    const problem =
      typeof uri !== 'string'
        ? 'must be a string'
        : uri.length > MAX_REDIRECT_URI_LENGTH
          ? `may be at most ${MAX_REDIRECT_URI_LENGTH} characters long`
          : redirectProblem(uri);
    if (problem) problems.push({ index, message: problem });
  });
  return problems;
}

/** An exact redirect URI the provider will compare against: https, http on loopback, or a native app's own scheme. */
export function redirectProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.hash || text.includes('#')) return 'may not carry a fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:')
    return LOOPBACK.has(url.hostname) ? undefined : 'must use https (http only on localhost, 127.0.0.1 or [::1])';
  if (/^(javascript|data|file|vbscript|blob):$/.test(url.protocol)) return `may not use the ${url.protocol} scheme`;
  // A private-use scheme of a native application (RFC 8252 §7.1): reverse domain name notation.
  return url.protocol.includes('.')
    ? undefined
    : 'a native application uses a private-use scheme in reverse domain notation (com.example.app:/callback)';
}

/** The client's settings as a whole, checked at creation and after every change. */
function check(
  settings: Required<Omit<ClientInput, 'first_party'>> & { first_party: boolean; registered: boolean },
  tokenExchange = false,
): void {
  const problems: FieldProblem[] = [];
  for (const field of ['redirect_uris', 'post_logout_redirect_uris'] as const) {
    for (const { index, message } of redirectListProblems(settings[field]))
      problems.push({ field: index === undefined ? `body.${field}` : `body.${field}.${index}`, message });
  }
  const grants = new Set(settings.grant_types);
  if (grants.has('authorization_code') && settings.redirect_uris.length === 0)
    problems.push({ field: 'body.redirect_uris', message: 'needs at least one URI for the authorization_code grant' });
  if (grants.has('refresh_token') && !grants.has('authorization_code') && !grants.has(DEVICE_CODE_GRANT))
    problems.push({ field: 'body.grant_types', message: `refresh_token comes with authorization_code or ${DEVICE_CODE_GRANT}` });
  if (grants.has('client_credentials') && settings.type === 'public')
    problems.push({ field: 'body.grant_types', message: 'client_credentials is for confidential clients only' });
  if (grants.has(TOKEN_EXCHANGE) && !tokenExchange)
    problems.push({ field: 'body.grant_types', message: 'token exchange is off (IMPERSONATION_ENABLED)' });
  if (grants.has(TOKEN_EXCHANGE) && settings.type === 'public')
    problems.push({ field: 'body.grant_types', message: `${TOKEN_EXCHANGE} is for confidential clients only` });
  if (settings.registered && settings.first_party)
    problems.push({ field: 'body.first_party', message: 'a client that registered itself is never first party' });
  if (problems.length > 0) throw new Validation(problems);
}

/** The provider's metadata for a client's settings. */
function metadataOf(settings: Required<Omit<ClientInput, 'first_party'>>, base: Record<string, unknown> = {}): Record<string, unknown> {
  const grants = settings.grant_types;
  const { backchannel_logout_uri: _uri, ...kept } = base;
  return {
    ...kept,
    ...(settings.backchannel_logout_uri === null ? {} : { backchannel_logout_uri: settings.backchannel_logout_uri }),
    backchannel_logout_session_required: settings.backchannel_logout_session_required,
    client_name: settings.name,
    // A native application's private-use scheme (RFC 8252) is refused for a web one.
    application_type: settings.redirect_uris.some((uri) => !/^https?:/.test(uri)) ? 'native' : 'web',
    redirect_uris: settings.redirect_uris,
    post_logout_redirect_uris: settings.post_logout_redirect_uris,
    grant_types: grants,
    response_types: grants.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: settings.type === 'public' ? 'none' : (base.token_endpoint_auth_method ?? 'client_secret_basic'),
    scope: settings.scopes.join(' '),
  };
}

/**
 * The applications that sign people in through the service's OpenID Connect provider, as admins
 * (and the command line) manage them: settings checked, secrets sealed at rest and shown once.
 */
export class OauthClients {
  private readonly key: Buffer;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    secretKey: string,
    /** PROVIDER_ALLOW_PRIVATE_URLS: whether a back-channel logout URI may be http and internal. */
    private readonly allowPrivateUrls = false,
    /** IMPERSONATION_ENABLED: whether a client may be given the token-exchange grant. */
    private readonly tokenExchange = false,
    /** Told each client changed here once the change is committed, so that this process reads it afresh. */
    private readonly changed: (clientId: string) => void = () => {},
  ) {
    this.key = clientSealingKey(secretKey);
  }

  async list(principal: Principal | null): Promise<ClientView[]> {
    if (principal) requireAdmin(principal);
    return (await listOauthClients(this.db)).map(clientView);
  }

  async get(principal: Principal | null, clientId: string): Promise<ClientView> {
    if (principal) requireAdmin(principal);
    return clientView(found(await findOauthClient(this.db, clientId)));
  }

  /** A new client, with its secret in clear when it is confidential (shown this once). */
  async create(principal: Principal | null, input: ClientInput): Promise<ClientView & { client_secret?: string }> {
    if (principal) requireAdmin(principal);
    const settings = {
      name: input.name,
      type: input.type,
      redirect_uris: input.redirect_uris ?? [],
      post_logout_redirect_uris: input.post_logout_redirect_uris ?? [],
      grant_types: input.grant_types ?? DEFAULT_GRANTS,
      scopes: withOpenId(input.scopes ?? ALL_SCOPES),
      first_party: input.first_party ?? false,
      backchannel_logout_uri: input.backchannel_logout_uri ?? null,
      backchannel_logout_session_required: input.backchannel_logout_session_required ?? true,
    };
    check({ ...settings, registered: false }, this.tokenExchange);
    await checkBackchannelLogoutUri(settings.backchannel_logout_uri, this.allowPrivateUrls);
    const secret = input.type === 'confidential' ? newSecret() : undefined;
    return this.transact(async (trx) => {
      const row = await insertOauthClient(trx, {
        client_id: randomBytes(16).toString('base64url'),
        name: settings.name,
        type: settings.type,
        client_secret_sealed: secret === undefined ? null : seal(this.key, secret),
        metadata: metadataOf(settings),
        first_party: settings.first_party,
        registered: false,
      });
      await recordAdminEvent(trx, principal, 'oauth_client.created', { client_id: row.client_id, type: row.type });
      return { ...clientView(row), ...(secret === undefined ? {} : { client_secret: secret }) };
    });
  }

  async update(principal: Principal | null, clientId: string, patch: ClientChanges): Promise<ClientView> {
    if (principal) requireAdmin(principal);
    const updated = await this.transact(async (trx) => {
      const current = found(await findOauthClient(trx, clientId));
      const view = clientView(current);
      const settings = {
        name: patch.name ?? view.name,
        type: view.type,
        redirect_uris: patch.redirect_uris ?? view.redirect_uris,
        post_logout_redirect_uris: patch.post_logout_redirect_uris ?? view.post_logout_redirect_uris,
        grant_types: patch.grant_types ?? view.grant_types,
        scopes: patch.scopes ? withOpenId(patch.scopes) : view.scopes,
        first_party: patch.first_party ?? view.first_party,
        backchannel_logout_uri: patch.backchannel_logout_uri === undefined ? view.backchannel_logout_uri : patch.backchannel_logout_uri,
        backchannel_logout_session_required: patch.backchannel_logout_session_required ?? view.backchannel_logout_session_required,
      };
      check({ ...settings, registered: current.registered }, this.tokenExchange);
      if (patch.backchannel_logout_uri) await checkBackchannelLogoutUri(patch.backchannel_logout_uri, this.allowPrivateUrls);
      const row = found(
        await updateOauthClient(trx, clientId, {
          name: settings.name,
          metadata: metadataOf(settings, current.metadata),
          first_party: settings.first_party,
        }),
      );
      await recordAdminEvent(trx, principal, 'oauth_client.updated', { client_id: clientId, fields: Object.keys(patch) });
      return clientView(row);
    });
    this.changed(clientId);
    return updated;
  }

  async remove(principal: Principal | null, clientId: string): Promise<void> {
    if (principal) requireAdmin(principal);
    await this.transact(async (trx) => {
      if (!(await deleteOauthClient(trx, clientId))) throw new NotFound('OAuth client not found');
      await recordAdminEvent(trx, principal, 'oauth_client.deleted', { client_id: clientId });
    });
    this.changed(clientId);
  }

  async rotateSecret(principal: Principal | null, clientId: string): Promise<{ client_id: string; client_secret: string }> {
    if (principal) requireAdmin(principal);
    const rotated = await this.transact(async (trx) => {
      const current = found(await findOauthClient(trx, clientId));
      if (current.type !== 'confidential')
        throw new Validation([{ field: 'path.client_id', message: 'is a public client, which has no secret' }]);
      const secret = newSecret();
      found(await setOauthClientSecret(trx, clientId, seal(this.key, secret)));
      await recordAdminEvent(trx, principal, 'oauth_client.secret_rotated', { client_id: clientId });
      return { client_id: clientId, client_secret: secret };
    });
    this.changed(clientId);
    return rotated;
  }
}

/** How long a back-channel logout URI's name may take to resolve when it is checked. */
const RESOLVE_TIMEOUT_MS = 5000;

/**
 * A back-channel logout URI is an address the service POSTs to, under the rules of every URL it
 * calls: https and public, unless PROVIDER_ALLOW_PRIVATE_URLS, which allows internal addresses and
 * http too; no fragment (Back-Channel Logout 1.0, section 2.2). 422 otherwise.
 */
async function checkBackchannelLogoutUri(uri: string | null, allowPrivateUrls: boolean): Promise<void> {
  if (uri === null) return;
  const refuse = (message: string) => new Validation([{ field: 'body.backchannel_logout_uri', message }]);
  const allowable = (message: string) => refuse(`${message}; PROVIDER_ALLOW_PRIVATE_URLS=true allows internal addresses and http://`);
  if (uri.includes('#')) throw refuse('may not carry a fragment');
  const problem = urlProblem(uri, allowPrivateUrls);
  if (problem !== undefined) throw urlProblem(uri, true) === undefined ? allowable(problem) : refuse(problem);
  if (allowPrivateUrls) return;
  try {
    await checkResolvesPublic(uri, RESOLVE_TIMEOUT_MS);
  } catch (error) {
    if (error instanceof RefusedAddress) throw error.internal ? allowable(error.message) : refuse(error.message);
    throw error;
  }
}

const newSecret = () => randomBytes(32).toString('base64url');

/** `openid` is always among a client's scopes: the provider is an OpenID Connect one. */
function withOpenId(scopes: Scope[]): Scope[] {
  return scopes.includes('openid') ? [...new Set(scopes)] : ['openid', ...new Set(scopes)];
}

/** An admin's change to the clients (or the command line's): about no account, so without a subject. */
function recordAdminEvent(trx: UnitOfWork, principal: Principal | null, type: AuditEventType, details: AuditDetails): Promise<void> {
  return recordEvent(trx, { type, actor: principal?.user.id ?? null, subject: null, details, origin: principal?.client ?? null });
}

function found(row: OauthClientRow | undefined): OauthClientRow {
  if (row === undefined) throw new NotFound('OAuth client not found');
  return row;
}
