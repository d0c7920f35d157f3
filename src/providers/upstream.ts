import { publicOnlyFetch } from '../infra/public-addresses.js';
import { hasAsciiLookalike, normalizeEmail } from '../email-address.js';
import type { IdentityProviderRow } from './provider-repository.js';
import { PRESETS } from './presets.js';

type OpenIdClient = typeof import('openid-client');
type Configuration = InstanceType<OpenIdClient['Configuration']>;
type ClientAuth = ReturnType<OpenIdClient['None']>;

let library: Promise<OpenIdClient> | undefined;
const openIdClient = (): Promise<OpenIdClient> => (library ??= import('openid-client'));

/** How long a provider may take to answer one request. */
const TIMEOUT_SECONDS = 10;
/** How long a provider's discovery document is reused before it is read again. */
const DISCOVERY_TTL_MS = 10 * 60 * 1000;

/** The provider could not be reached, or answered something that is not its metadata. */
export class ProviderUnreachable extends Error {}
/** The provider's answer failed a check: a wrong code, an ID token with a wrong signature, issuer, audience or nonce. */
export class ProviderAnswerRefused extends Error {}

/** What a provider says of the person who signed in. */
export interface UpstreamProfile {
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
  name: string | undefined;
}

export interface AuthorizationRequest {
  redirectUri: string;
  state: string;
  nonce: string | undefined;
  codeVerifier: string;
}

/**
 * The protocol towards upstream providers, with openid-client: discovery, the authorization URL
 * with state, nonce and PKCE S256, the code exchange and the ID token's checks (signature from the
 * JWKS, `iss`, `aud`, `nonce`, `exp`). A plain OAuth2 provider is described to openid-client by
 * its URLs, and the person is read from its user-info URL (and, GitHub's way, its e-mails URL).
 */
export class Upstream {
  private readonly discovered = new Map<string, { config: Promise<Configuration>; until: number }>();

  /** `allowPrivateUrls` (PROVIDER_ALLOW_PRIVATE_URLS) off: every request goes to public addresses only, as resolved when it connects. */
  constructor(private readonly allowPrivateUrls: boolean) {}

  static randomSecret(): Promise<string> {
    return openIdClient().then((client) => client.randomPKCECodeVerifier());
  }

  async authorizationUrl(provider: IdentityProviderRow, clientSecret: string | undefined, request: AuthorizationRequest): Promise<URL> {
    const client = await openIdClient();
    const config = await this.configuration(provider, clientSecret);
    const parameters: Record<string, string> = {
      redirect_uri: request.redirectUri,
      scope: provider.scopes.join(' '),
      state: request.state,
      code_challenge: await client.calculatePKCECodeChallenge(request.codeVerifier),
      code_challenge_method: 'S256',
    };
    if (request.nonce !== undefined) parameters.nonce = request.nonce;
    const responseMode = PRESETS[provider.slug]?.responseMode;
    if (responseMode) parameters.response_mode = responseMode;
    return client.buildAuthorizationUrl(config, parameters);
  }

  /** Exchanges the code of the provider's redirect (`callbackUrl`) and reads the person from its answer. */
  async complete(
    provider: IdentityProviderRow,
    clientSecret: string | undefined,
    callbackUrl: URL,
    checks: { state: string; nonce: string | undefined; codeVerifier: string },
  ): Promise<UpstreamProfile> {
    const client = await openIdClient();
    const config = await this.configuration(provider, clientSecret);
    let tokens: Awaited<ReturnType<OpenIdClient['authorizationCodeGrant']>>;
    try {
      tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: provider.kind === 'oidc',
      });
    } catch (error) {
      throw unreachable(error) ? new ProviderUnreachable('The provider could not be reached', { cause: error }) : refused(error);
    }
    if (provider.kind === 'oidc') {
      const claims: Record<string, unknown> = { ...tokens.claims() };
      // Some providers leave the e-mail out of the ID token; their user-info answer has it.
      if (claims[provider.claims.email] === undefined && config.serverMetadata().userinfo_endpoint) {
        const info = await this.guarded(() => client.fetchUserInfo(config, tokens.access_token, String(claims.sub)));
        Object.assign(claims, info, { sub: claims.sub });
      }
      return profileOf(provider, claims);
    }
    const info = await this.readJson(client, config, tokens.access_token, provider.userinfo_url!);
    const profile = profileOf(provider, info);
    if (provider.emails_url) {
      // GitHub's shape: [{email, primary, verified}]; the primary address, verified or not, is the person's.
      const emails = await this.readJson(client, config, tokens.access_token, provider.emails_url);
      const primary = Array.isArray(emails) ? (emails as Record<string, unknown>[]).find((entry) => entry.primary === true) : undefined;
      const email = primary && upstreamEmail(primary.email);
      if (email) return { ...profile, email, emailVerified: primary.verified === true };
      return { ...profile, emailVerified: false };
    }
    return profile;
  }

  private async readJson(client: OpenIdClient, config: Configuration, accessToken: string, url: string): Promise<unknown> {
    const response = await this.guarded(() => client.fetchProtectedResource(config, accessToken, new URL(url), 'GET'));
    if (!response.ok) throw new ProviderAnswerRefused(`${url} answered ${response.status}`);
    try {
      return await response.json();
    } catch (error) {
      throw new ProviderAnswerRefused(`${url} did not answer JSON`, { cause: error });
    }
  }

  private async guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw unreachable(error) ? new ProviderUnreachable('The provider could not be reached', { cause: error }) : refused(error);
    }
  }

  /** The provider as openid-client knows it: discovered (and kept a while) for OIDC, described for OAuth2. */
  private configuration(provider: IdentityProviderRow, clientSecret: string | undefined): Promise<Configuration> {
    const key = `${provider.id}:${provider.updated_at.getTime()}`;
    const now = Date.now();
    const cached = this.discovered.get(key);
    if (cached && cached.until > now) return cached.config;
    const config = this.configure(provider, clientSecret);
    this.discovered.set(key, { config, until: now + DISCOVERY_TTL_MS });
    // A failed discovery is not kept: the next sign-in tries again.
    config.catch(() => this.discovered.delete(key));
    return config;
  }

  private async configure(provider: IdentityProviderRow, clientSecret: string | undefined): Promise<Configuration> {
    const client = await openIdClient();
    const auth = clientSecret === undefined ? client.None() : secretAuthentication(client, provider.kind, clientSecret);
    // The registry allows plain http on loopback hosts only (development and tests).
    const insecure = [provider.issuer, provider.authorization_url, provider.token_url].some((url) => url?.startsWith('http:'));
    let config: Configuration;
    if (provider.kind === 'oidc') {
      try {
        config = await client.discovery(new URL(provider.issuer!), provider.client_id, undefined, auth, {
          execute: insecure ? [client.allowInsecureRequests] : [],
          timeout: TIMEOUT_SECONDS,
          ...(this.allowPrivateUrls ? {} : { [client.customFetch]: publicOnlyFetch }),
        });
      } catch (error) {
        throw new ProviderUnreachable(`The discovery document of ${provider.issuer} could not be read`, { cause: error });
      }
      // openid-client trusts an ID token from the token endpoint without its signature (TLS vouches for
      // it); the signature is checked against the provider's JWKS all the same.
      client.enableNonRepudiationChecks(config);
    } else {
      config = new client.Configuration(
        {
          issuer: new URL(provider.authorization_url!).origin,
          authorization_endpoint: provider.authorization_url!,
          token_endpoint: provider.token_url!,
        },
        provider.client_id,
        undefined,
        auth,
      );
      if (insecure) client.allowInsecureRequests(config);
    }
    config.timeout = TIMEOUT_SECONDS;
    // Discovery, the token and user-info requests, the JWKS and the e-mails URL all pass through it.
    if (!this.allowPrivateUrls) config[client.customFetch] = publicOnlyFetch;
    return config;
  }
}

/**
 * How the client secret reaches the provider's token endpoint. An OpenID provider is followed as its
 * discovery document says: HTTP Basic (`client_secret_basic`, OpenID Connect's default) when it lists
 * it or lists nothing, the form body (`client_secret_post`) when it lists only that. A plain OAuth2
 * provider publishes no such list; the secret goes in the form body, as GitHub and most such
 * providers document it.
 */
function secretAuthentication(client: OpenIdClient, kind: 'oidc' | 'oauth2', secret: string): ClientAuth {
  const basic = client.ClientSecretBasic(secret);
  const post = client.ClientSecretPost(secret);
  if (kind === 'oauth2') return post;
  return (server, ...rest) => {
    const methods = server.token_endpoint_auth_methods_supported;
    const onlyPost = Array.isArray(methods) && !methods.includes('client_secret_basic') && methods.includes('client_secret_post');
    return (onlyPost ? post : basic)(server, ...rest);
  };
}

/**
 * A provider's address as stored: trimmed, ASCII letters lower-cased; none when it has no `@`. One
 * holding a character that case folding or NFKC turns into ASCII (the Kelvin sign for `k`) refuses
 * the answer: it would otherwise be taken for the account of the ASCII spelling.
 */
function upstreamEmail(value: unknown): string | undefined {
  if (typeof value !== 'string' || !value.includes('@')) return undefined;
  if (hasAsciiLookalike(value))
    throw new ProviderAnswerRefused('The provider gave an e-mail address with a character that stands for ASCII');
  return normalizeEmail(value);
}

/** The person, read from the fields the provider's `claims` name (dotted paths reach nested fields). */
function profileOf(provider: IdentityProviderRow, claims: unknown): UpstreamProfile {
  const read = (path: string | null): unknown =>
    path === null ? undefined : path.split('.').reduce<unknown>((value, key) => (isObject(value) ? value[key] : undefined), claims);
  const subject = read(provider.claims.subject);
  if (typeof subject !== 'string' && typeof subject !== 'number') throw new ProviderAnswerRefused('The provider named no subject');
  const email = read(provider.claims.email);
  const verified = read(provider.claims.email_verified);
  const name = read(provider.claims.name);
  return {
    subject: String(subject),
    email: upstreamEmail(email),
    // Some providers send the flag as a string.
    emailVerified: verified === true || verified === 'true',
    name: typeof name === 'string' && name.trim() ? name.trim().slice(0, 100) : undefined,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * A network failure or a timeout, rather than an answer, wherever it sits in the chain of causes:
 * openid-client passes fetch's failure on as it is or wrapped, and wraps its timeouts (`OAUTH_TIMEOUT`).
 * By name rather than `instanceof`, which another realm's TypeError fails, and which any other
 * TypeError (a fault in reading an answer) would pass.
 */
function unreachable(error: unknown): boolean {
  let cause = error;
  for (let depth = 0; depth < 5 && isObject(cause); depth++, cause = cause.cause) {
    const { name, code, message } = cause;
    if (name === 'TimeoutError' || name === 'AbortError' || code === 'OAUTH_TIMEOUT' || code === 'OAUTH_ABORT') return true;
    if (name === 'TypeError' && message === 'fetch failed') return true;
  }
  return false;
}

function refused(error: unknown): ProviderAnswerRefused {
  return error instanceof ProviderAnswerRefused ? error : new ProviderAnswerRefused('The provider answer failed a check', { cause: error });
}
