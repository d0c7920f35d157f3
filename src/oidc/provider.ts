import { publicOnlyFetch } from '../infra/public-addresses.js';
import { createPublicKey } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import type { Kysely } from 'kysely';
import type { OidcConfig, PublicJwk } from '../config/index.js';
import { publicJwk } from '../config/keys.js';
import type { OauthClientCache } from './client-cache.js';
import { readsOf } from './request-reads.js';
import { heldTokenWrites } from './request-writes.js';
import type { Database } from '../db/types.js';
import { findUserById } from '../users/user-repository.js';
import { deriveKey } from '../infra/sealed.js';
import type { Logger } from '../logger.js';
import { UnreadableSecret } from '../errors.js';
import { adapterClass, userIdOf } from './adapter.js';
import { clientSealingKey } from './clients.js';
import type { operations } from '../../generated/openapi.js';
import { plainPages, type ProviderPages } from './default-pages.js';
import { databaseInteractions, type OidcInteractions } from './interactions.js';
import { providerModule, runtimeSupported, type Grant, type Provider, type ProviderContext, type ProviderMiddleware } from './library.js';
import { SigningKeys } from './keys.js';
import { formPostToRedirectUri } from './form-post.js';
import { logoutWithoutSession } from './logout.js';
import { offlineAccessForFirstParty } from './offline-access.js';
import { keepOrganizationOnGrants, organizationSupport, ORGANIZATIONS_SCOPE, type OrganizationDirectory } from './organizations.js';
import { CHECKED_METADATA, registrationValidator, SELF_REGISTERED } from './registration.js';
import { providerTokenAuthenticator } from './api-access.js';
import { typedIdTokens } from './id-token-type.js';
import { queueProviderLogouts, type BackchannelLogoutDispatcher } from './backchannel-logout.js';
import {
  deviceFlowFeature,
  prefilledUserCode,
  refuseSessionlessPosts,
  sayInterval,
  unauthorizedClientWithoutGrant,
  withPacedDevicePolling,
  type DevicePages,
} from './device-flow.js';
import type { ExtraGrantType } from './token-exchange.js';
import { resourceTokenSupport } from './resource-tokens.js';
import type { ClientInfo, Principal } from '../principal.js';

/** Where the provider's endpoints are; discovery is at /.well-known/openid-configuration. */
export const OIDC_PREFIX = '/oauth2/';
/** The hosted pages' own paths under the prefix, which the provider does not answer. */
export const INTERACTION_PREFIX = '/oauth2/interaction/';
export const DISCOVERY_PATH = '/.well-known/openid-configuration';
/** The service's JWK Set, which publishes the provider's key beside the API's. */
export const JWKS_PATH = '/.well-known/jwks.json';

export interface OidcProviderOptions {
  db: Kysely<Database>;
  /** The OAuth clients as this process keeps them, current on every process. */
  clients: OauthClientCache;
  config: OidcConfig;
  /** JWT_ISSUER: the provider's issuer, as the API's tokens' `iss`. */
  issuer: string;
  /** SECRET_KEY: keys the provider's cookies and seals client secrets and the generated signing key. */
  secret: string;
  accessTokenMinutes: number;
  refreshTokenDays: number;
  sessionDays: number;
  trustProxy: boolean;
  /** PROVIDER_ALLOW_PRIVATE_URLS: whether the URLs of clients it fetches (`jwks_uri`, `sector_identifier_uri`) may be internal. */
  allowPrivateUrls: boolean;
  logger: Logger;
  /** The logout and error pages; plain ones of the provider's own when not given. */
  pages?: ProviderPages;
  /** The device sign-in's page, `/oauth2/device` (RFC 8628; see device-flow.ts). */
  devicePages: DevicePages;
  /**
   * The API's per-address rate limit, when on (see src/http/oidc-limits.ts): false when the request
   * was refused and answered, on the error page `errorPage` renders for a browser's request.
   */
  admit?: (ctx: Koa.Context, errorPage: ErrorPage) => Promise<boolean>;
  /** Who belongs to which organisation: the `organizations` scope's claim, and the tokens of a sign-in for one. */
  organizations: OrganizationDirectory;
  /** Clients that exist without anyone making them (the console's), first party, never rows of `oauth_clients`. */
  builtInClients?: ReadonlyArray<Record<string, unknown>>;
  /** Where logout tokens go to be delivered (back-channel logout), instead of the library's sending them while the person waits. */
  backchannelLogouts?: BackchannelLogoutDispatcher;
  /** Grant types the token endpoint takes beside the library's own (token exchange: token-exchange.ts). */
  extraGrantTypes?: readonly ExtraGrantType[];
}

/** Renders the provider's error page for `out` (`error`, `error_description`). */
export type ErrorPage = (ctx: Koa.Context, out: Record<string, string>, error: unknown) => Promise<void>;

export interface OidcProvider {
  /** oidc-provider's instance, made on first use. */
  instance(): Promise<Provider>;
  interactions: OidcInteractions;
  /** The public keys ID tokens are verified with, for the JWK Set (RSA first); none until there are. */
  publishedKeys(): Promise<PublicJwk[]>;
  /** Answers discovery and /oauth2/* (the hosted pages' paths aside); passes every other request on. */
  middleware: Koa.Middleware;
  /** The principal of an access token the provider issued to a first-party client (see api-access.ts), or a 401. */
  authenticate(accessToken: string, client: ClientInfo): Promise<Principal>;
}

const SCOPES = ['openid', 'offline_access', 'profile', 'email', ORGANIZATIONS_SCOPE];
/** The values of the ID token's `acr`: the assurance level of the sign-in, as the API's tokens' `aal`. */
const ACR_VALUES = ['aal1', 'aal2'];

/** How long a provider session signed in at `loginTs` (seconds) has left, at most `maxDays`; at least a second. */
function sessionSeconds(loginTs: number | undefined, maxDays: number): number {
  const max = maxDays * 24 * 3600;
  if (loginTs === undefined) return max;
  return Math.max(1, Math.min(max, loginTs + max - Math.floor(Date.now() / 1000)));
}

/**
 * The client-credentials grant has no user: a request for an OpenID scope there is refused with
 * invalid_scope, rather than given a token whose scope names a person who is not there.
 */
function refuseOpenIdScopesWithoutUser(
  token: { save: (this: unknown, ...args: unknown[]) => Promise<string>; scope?: string },
  InvalidScope: new (description: string, scope: string) => Error,
): void {
  const save = token.save;
  Object.defineProperty(token, 'save', {
    value(this: { scope?: string }, ...args: unknown[]) {
      const refused = (this.scope ?? '').split(' ').filter((scope) => SCOPES.includes(scope));
      if (refused.length > 0) throw new InvalidScope('OpenID scopes need a user; the client credentials grant has none', refused.join(' '));
      return save.apply(this, args);
    },
  });
}

/** How a client authenticated, as the provider's policies are told. */
interface ClientAuth {
  clientId: string;
  clientAuthMethod: string;
}

/**
 * The provider writes its addresses (discovery's endpoints, the redirect to the hosted pages, the
 * logout form's action) from the request's host: it is told the issuer's, whatever Host the request
 * named. Behind a trusted proxy (TRUST_PROXY), the forwarded host and scheme become the issuer's too.
 */
function pinToIssuer(req: IncomingMessage, issuer: URL, trustProxy: boolean): void {
  req.headers.host = issuer.host;
  if (trustProxy) {
    req.headers['x-forwarded-host'] = issuer.host;
    req.headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
  }
}

/** Whether oidc-provider answers this path. */
export function isProviderPath(path: string): boolean {
  return path === DISCOVERY_PATH || (path.startsWith(OIDC_PREFIX) && !path.startsWith(INTERACTION_PREFIX));
}

const ROUTES = {
  authorization: '/oauth2/authorize',
  token: '/oauth2/token',
  userinfo: '/oauth2/userinfo',
  revocation: '/oauth2/revoke',
  introspection: '/oauth2/introspect',
  end_session: '/oauth2/end_session',
  registration: '/oauth2/register',
  jwks: JWKS_PATH,
  // The device authorization grant (RFC 8628): the device's request, and the person's page.
  device_authorization: '/oauth2/device/auth',
  code_verification: '/oauth2/device',
  // Routes the service does not offer, kept under the prefix all the same.
  backchannel_authentication: '/oauth2/backchannel',
  pushed_authorization_request: '/oauth2/par',
  challenge: '/oauth2/challenge',
};

type OperationId = keyof operations;

/** The contract's operation of each endpoint, with the paths under it (an authorization's resumption, a logout's confirmation). */
const OPERATIONS: ReadonlyArray<[string, OperationId]> = [
  [ROUTES.authorization, 'oauth2Authorize'],
  [ROUTES.token, 'oauth2Token'],
  [ROUTES.userinfo, 'oauth2UserInfo'],
  [ROUTES.introspection, 'oauth2Introspect'],
  [ROUTES.revocation, 'oauth2Revoke'],
  [ROUTES.end_session, 'oauth2EndSession'],
  [ROUTES.registration, 'oauth2Register'],
  // The device's request before the person's page, whose path it extends.
  [ROUTES.device_authorization, 'oauth2DeviceAuthorization'],
  [ROUTES.code_verification, 'oauth2DeviceVerification'],
];

/** The operation of the contract a provider's path belongs to, which the rate limit counts it as. */
export function providerOperation(path: string): OperationId | undefined {
  if (path === DISCOVERY_PATH) return 'openIdConfiguration';
  return OPERATIONS.find(([route]) => path === route || path.startsWith(`${route}/`))?.[1];
}

/**
 * The service as an OpenID Connect provider: oidc-provider, configured for the OAuth 2.1 profile
 * (authorization code with PKCE S256 for every client, refresh tokens rotated on every use, client
 * credentials; no implicit, hybrid or password grant), with its storage in the service's database.
 * The library is loaded, and the provider made, by the first request that needs it.
 */
export function createOidcProvider(options: OidcProviderOptions): OidcProvider {
  const keys = new SigningKeys(options.db, options.config, options.secret);
  const issuer = URL.canParse(options.issuer) ? new URL(options.issuer) : undefined;
  const pages = options.pages ?? plainPages(options.config.brandName);
  let made: Promise<Provider> | undefined;
  let handle: ReturnType<Provider['callback']> | undefined;
  const instance = (): Promise<Provider> => {
    made ??= makeProvider(options, keys, pages).catch((error: unknown) => {
      made = undefined;
      throw error;
    });
    return made;
  };
  const middleware: Koa.Middleware = async (ctx, next) => {
    if (!isProviderPath(ctx.path)) {
      await next();
      return;
    }
    const errorPage = (page: Koa.Context, out: Record<string, string>, error: unknown) => pages.renderError(page, out, error);
    if (options.admit && !(await options.admit(ctx, errorPage))) return;
    const provider = await instance();
    if (issuer) pinToIssuer(ctx.req, issuer, options.trustProxy);
    // The provider answers the request itself, as the Koa application it is.
    ctx.respond = false;
    handle ??= provider.callback();
    await handle(ctx.req, ctx.res);
  };
  return {
    instance,
    interactions: databaseInteractions(instance, options.clients, builtInClientViews(options.builtInClients)),
    authenticate: providerTokenAuthenticator(instance, options.db, firstPartyCheck(options)),
    async publishedKeys() {
      return ((await keys.current()) ?? []).map((signing) => publicJwk(createPublicKey(signing.key)));
    },
    middleware,
  };
}

/** Whether a client is first party: a built-in one, or one an admin marked so. */
function firstPartyCheck(options: Pick<OidcProviderOptions, 'clients' | 'builtInClients'>): (clientId: string) => Promise<boolean> {
  const builtIn = new Set((options.builtInClients ?? []).map((client) => String(client.client_id)));
  return async (clientId) => builtIn.has(clientId) || (await options.clients.find(clientId))?.first_party === true;
}

/** The built-in clients as the hosted pages describe them: first party, made by the service. */
function builtInClientViews(clients: OidcProviderOptions['builtInClients']): Map<string, { name: string }> {
  return new Map((clients ?? []).map((client) => [String(client.client_id), { name: String(client.client_name ?? client.client_id) }]));
}

async function makeProvider(options: OidcProviderOptions, keys: SigningKeys, pages: ProviderPages): Promise<Provider> {
  const { db, config, logger } = options;
  const { default: Provider, interactionPolicy, errors } = await providerModule();
  if (!runtimeSupported()) {
    logger.warn(
      { node: process.versions.node },
      'the OpenID Connect provider runs on a Node.js its library (oidc-provider) does not support; use Node.js 22 or later',
    );
  }
  const signing = await keys.ensure();
  const privateJwks = signing.map(({ key, algorithm }) => ({
    ...key.export({ format: 'jwk' }),
    kid: publicJwk(createPublicKey(key)).kid,
    alg: algorithm,
    use: 'sig',
  }));
  const algorithms = signing.map((key) => key.algorithm);
  const secretKey = clientSealingKey(options.secret);
  const firstParty = firstPartyCheck(options);
  // The requests of first-party clients, which are granted what they ask for without a consent page.
  const trusted = new WeakSet<object>();
  const policy = interactionPolicy.base();
  for (const check of policy.find((prompt) => prompt.name === 'consent')?.checks ?? []) {
    const original = check.check.bind(check);
    check.check = (ctx) => (ctx.oidc && trusted.has(ctx.oidc) ? false : original(ctx));
  }

  // The requests answered with the service's error page.
  const errorPages = new WeakSet<object>();
  const organizations = organizationSupport({ db, organizations: options.organizations, errors });
  const resources = resourceTokenSupport({
    db,
    algorithm: algorithms[0],
    accessTokenSeconds: options.accessTokenMinutes * 60,
    organizationClaims: (ctx, token) => organizations.activeClaims(ctx, token),
    InvalidTarget: errors.InvalidTarget,
  });

  const configuration: Record<string, unknown> = {
    adapter: adapterClass({
      db,
      clients: options.clients,
      secretKey,
      currentContext: () => Provider.ctx,
      sessionMaxDays: options.sessionDays,
    }),
    clients: (options.builtInClients ?? []).map((client) => ({ ...client, [SELF_REGISTERED]: false })),
    async findAccount(ctx: ProviderContext, sub: string, token?: { grantId?: string }) {
      const id = userIdOf(sub);
      // Read with the token that names this person, when the request presented one.
      const user = id === null ? undefined : await (readsOf(ctx)?.users.get(id) ?? findUserById(db, id));
      if (!user || !user.is_active || user.deleted_at !== null) return undefined;
      return {
        accountId: sub,
        async claims(_use: string, scope: string) {
          return {
            sub,
            name: user.name,
            updated_at: Math.floor(user.updated_at.getTime() / 1000),
            email: user.email,
            email_verified: user.email_verified,
            ...(await organizations.accountClaims(ctx.oidc!.provider, sub, scope, token)),
          };
        },
      };
    },
    // `acr` is the sign-in's assurance level, as the API's tokens' `aal`: aal2 after a second factor, else aal1.
    acrValues: ACR_VALUES,
    // `org_id` and `org_role` come with every sign-in that named an organisation, as Auth0's do.
    claims: {
      openid: ['sub', 'auth_time', 'acr', 'amr', 'org_id', 'org_role'],
      profile: ['name', 'updated_at'],
      email: ['email', 'email_verified'],
      [ORGANIZATIONS_SCOPE]: [ORGANIZATIONS_SCOPE],
    },
    extraParams: organizations.extraParams,
    extraTokenClaims: async (ctx: ProviderContext, token: { kind?: string; grantId?: string; accountId?: string }) =>
      (await resources.claims(ctx, token)) ?? organizations.tokenClaims(ctx, token),
    // An API's access token (RFC 9068) carries the `scope` its claims settle on.
    formats: {
      customizers: {
        jwt: (ctx: unknown, token: object, jwt: { payload: Record<string, unknown> }) => resources.customizeJwt(ctx, token, jwt),
      },
    },
    // The ID token carries the claims of the scopes granted, as Keycloak's and Auth0's do: relying
    // parties that read the person from it alone (most do) get the e-mail address and the name.
    conformIdTokenClaims: false,
    scopes: SCOPES,
    responseTypes: ['code'],
    // Clients that register themselves are marked, and held to the admin API's rules for addresses.
    extraClientMetadata: { properties: CHECKED_METADATA, validator: registrationValidator(errors.InvalidClientMetadata) },
    clientDefaults: {
      grant_types: ['authorization_code'],
      response_types: ['code'],
      // RS256, OpenID Connect's default, for a client that names none; ES256 for one that asks, when there is an EC key.
      id_token_signed_response_alg: algorithms[0],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    enabledJWA: { idTokenSigningAlgValues: algorithms },
    jwks: { keys: privateJwks },
    cookies: { keys: [deriveKey(options.secret, 'oidc-cookies').toString('base64url')] },
    // OAuth 2.1: PKCE for every client; the library knows S256 only.
    pkce: { required: () => true },
    allowOmittingSingleRegisteredRedirectUri: false,
    // Every refresh rotates the token; before it does, `organization_id` switches the organisation.
    rotateRefreshToken: async (ctx: ProviderContext) => {
      await organizations.refreshing(ctx);
      return true;
    },
    ttl: {
      AccessToken: options.accessTokenMinutes * 60,
      ClientCredentials: options.accessTokenMinutes * 60,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 3600,
      RefreshToken: options.refreshTokenDays * 24 * 3600,
      // At most SESSION_MAX_DAYS from the sign-in, however often the session is used since.
      Session: (_ctx: unknown, session: { loginTs?: number }) => sessionSeconds(session.loginTs, options.sessionDays),
      Grant: options.sessionDays * 24 * 3600,
      DeviceCode: config.deviceCodeExpireSeconds,
    },
    features: {
      devInteractions: { enabled: false },
      // APIs (resource servers, RFC 8707) that admins made: their tokens are JWTs (RFC 9068), `typ: at+jwt`.
      resourceIndicators: resources.feature,
      // A confidential client (a resource server) may introspect any token; a public one only its own.
      introspection: {
        enabled: true,
        allowedPolicy: (_ctx: unknown, client: ClientAuth, token: { clientId?: string }) =>
          client.clientAuthMethod !== 'none' || token.clientId === client.clientId,
      },
      // A client revokes only its own tokens; another's is left alone, as RFC 7009 lets a server do.
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx: unknown, client: ClientAuth, token: { clientId?: string }) => token.clientId === client.clientId,
      },
      userinfo: { enabled: true },
      clientCredentials: { enabled: true },
      deviceFlow: deviceFlowFeature(options.devicePages, SELF_REGISTERED),
      pushedAuthorizationRequests: { enabled: false },
      registration: {
        enabled: config.registration !== 'off',
        initialAccessToken: config.registration === 'token' ? config.registrationToken : false,
      },
      // Back-Channel Logout 1.0: its client metadata and discovery's fields; the tokens are queued (backchannel-logout.ts).
      backchannelLogout: { enabled: options.backchannelLogouts !== undefined },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx: Koa.Context, form: string) => pages.logoutSource(ctx, form),
        postLogoutSuccessSource: (ctx: Koa.Context) => pages.postLogoutSuccessSource(ctx),
      },
    },
    // Browsers may call the token endpoint of a public client (a single-page application) from the
    // origins of its redirect URIs, and userinfo of any client from those; nothing else cross-origin.
    clientBasedCORS: (ctx: ProviderContext, origin: string, client: { clientAuthMethod: string; redirectUris: string[] }) =>
      origin !== 'null' &&
      (ctx.oidc?.route === 'userinfo' || client.clientAuthMethod === 'none') &&
      client.redirectUris.some((uri) => URL.parse(uri)?.origin === origin),
    renderError: (ctx: Koa.Context, out: Record<string, string>, error: unknown) => {
      errorPages.add(ctx);
      return pages.renderError(ctx, out, error);
    },
    // What the provider fetches of a client's (its JWKS, its sector identifier document) goes to public
    // addresses only, as resolved when it connects, unless PROVIDER_ALLOW_PRIVATE_URLS; then the
    // library's own special-use address guard is lifted too.
    fetch: options.allowPrivateUrls
      ? (url: string | URL, { dispatcher: _guard, ...init }: RequestInit & { dispatcher?: unknown }) => globalThis.fetch(url, init)
      : (url: string | URL, init: RequestInit) => publicOnlyFetch(url, init),
    // First-party clients are given what they ask for without a consent page.
    async loadExistingGrant(ctx: ProviderContext): Promise<Grant | undefined> {
      const oidc = ctx.oidc!;
      const clientId = oidc.client!.clientId;
      const session = oidc.session as { accountId?: string; grantIdFor(clientId: string): string | undefined };
      const grantId = (oidc.result as { consent?: { grantId?: string } } | undefined)?.consent?.grantId ?? session.grantIdFor(clientId);
      let grant = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
      const accountId = oidc.account?.accountId ?? session.accountId;
      if (accountId && (await firstParty(clientId))) {
        trusted.add(oidc);
        if (!grant || grant.accountId !== accountId) grant = new oidc.provider.Grant({ accountId, clientId });
        grant.addOIDCScope([...oidc.requestParamScopes].join(' '));
        const claims = [...oidc.requestParamClaims];
        if (claims.length > 0) grant.addOIDCClaims(claims);
        resources.grantRequested(ctx, grant);
        await grant.save();
      }
      if (grant && accountId) await organizations.choose(ctx, grant, accountId);
      return grant;
    },
    interactions: { policy, url: (_ctx: unknown, interaction: { uid: string }) => `${INTERACTION_PREFIX}${interaction.uid}` },
    routes: ROUTES,
  };
  const provider = new (withPacedDevicePolling(Provider, db, errors.SlowDown))(options.issuer, configuration);
  provider.proxy = options.trustProxy;
  keepOrganizationOnGrants(provider);
  typedIdTokens(
    provider.IdToken,
    signing.map(({ key, algorithm }) => ({ key, algorithm, kid: publicJwk(createPublicKey(key)).kid })),
  );
  // ID tokens carry `sid` for every client, not only those that asked for back-channel logout.
  Object.defineProperty(provider.Client.prototype, 'includeSid', { value: () => true });
  refuseOpenIdScopesWithoutUser(provider.ClientCredentials.prototype, errors.InvalidScope);
  if (options.backchannelLogouts) queueProviderLogouts(provider, options.backchannelLogouts);
  for (const grant of options.extraGrantTypes ?? []) {
    const registrar = provider as Provider & { registerGrantType(type: string, handler: unknown, parameters: string[]): void };
    registrar.registerGrantType(grant.type, grant.handler(errors, firstParty), grant.parameters);
  }
  // A client that registered itself may have named anyone's address as its redirect URI. Until a person has
  // acted in the sign-in (the authorization resumes after a form of the hosted pages), its errors are shown
  // on the service's page rather than sent there: the library redirects an error that allows it, after
  // emitting this event.
  provider.on('authorization.error', (ctx, error) => {
    const oidc = (ctx as { oidc?: { route?: string; client?: { metadata(): Record<string, unknown> } } }).oidc;
    if (oidc?.route !== 'resume' && oidc?.client?.metadata()[SELF_REGISTERED] === true)
      (error as { allow_redirect?: boolean }).allow_redirect = false;
  });
  const use = (middleware: ProviderMiddleware) => (provider as Provider & { use(middleware: ProviderMiddleware): void }).use(middleware);
  // First, so that the token endpoint's held writes are made once every other middleware is done.
  use(heldTokenWrites(db, ROUTES.token, () => new errors.InvalidGrant('the code or refresh token was used meanwhile')));
  use(logoutWithoutSession(pages));
  use(offlineAccessForFirstParty(ROUTES.authorization, firstParty));
  use(formPostToRedirectUri(errorPages));
  use(prefilledUserCode(options.devicePages));
  use(refuseSessionlessPosts(options.devicePages, ROUTES.code_verification));
  use(unauthorizedClientWithoutGrant());
  provider.on('device_authorization.success', (_ctx, body) => sayInterval(body as Record<string, unknown>));
  provider.on('server_error', (_ctx, error: unknown) => {
    // A client secret that no longer opens (adapter.ts) is a setting to fix, said in one line.
    const cause = (error as Error).cause;
    if (cause instanceof UnreadableSecret) logger.error(cause.detail);
    else logger.error({ err: error }, 'the OpenID Connect provider failed to answer');
  });
  return provider;
}
