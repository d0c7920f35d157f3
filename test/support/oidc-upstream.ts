import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { providerClass, type Interaction, type Provider } from '../../src/oidc/library.js';

/** The parts of oidc-provider's API this peer uses beyond the service's own. */
interface Peer extends Provider {
  use(middleware: (ctx: PeerContext, next: () => Promise<void>) => Promise<void>): void;
}
interface PeerContext {
  path: string;
  method: string;
  status: number;
  body: unknown;
  req: IncomingMessage;
  res: ServerResponse;
  respond?: boolean;
  oidc?: { route?: string; body?: Record<string, unknown> };
}

/** A person with an account at the upstream provider, as OpenID Connect describes them. */
export interface UpstreamAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

/**
 * What the provider's token endpoint does to the ID token oidc-provider issued, before it leaves:
 * nothing; re-signed with the provider's own key for an audience of someone else; or signed with a
 * key that is not in the provider's JWKS (under the kid of the one that is).
 */
export type IdTokenTampering = 'none' | 'wrong_aud' | 'wrong_signature';

/**
 * An OpenID provider the test runs on localhost, built on oidc-provider: discovery, JWKS,
 * authorization with a login prompt and a consent prompt, the token endpoint (client secret, PKCE,
 * single-use codes), user-info. Its login and consent pages are two small routes: `signIn` plays a
 * browser that follows the authorization URL, answers the login page for the chosen account, and is
 * consented at once.
 */
export interface OidcUpstream {
  /** `http://localhost:PORT`. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The people who can sign in, by subject; a test may add to it at any time. */
  accounts: Map<string, UpstreamAccount>;
  /** Set by a test to make the token endpoint answer a bad ID token; reset it afterwards. */
  tamper: IdTokenTampering;
  /** Every authorization request's query that reached oidc-provider, in order. */
  authorizations: URLSearchParams[];
  /** How each token request authenticated the client, in order: `client_secret_basic`, `client_secret_post` or `none`. */
  tokenAuthentications: string[];
  /**
   * A fresh browser at `authorizationUrl` (the service's 302 target), signing in as `sub`: returns
   * where the provider finally sends it (the service's callback with `code` and `state`, or `error`).
   */
  signIn(authorizationUrl: string, sub: string): Promise<URL>;
  /** As `signIn`, but the person declines at the login page: the provider answers `access_denied`. */
  decline(authorizationUrl: string): Promise<URL>;
  /** Stops listening and drops open connections: the provider is unreachable from now on. */
  close(): Promise<void>;
}

export interface OidcUpstreamOptions {
  /** The service's callback URIs registered for the client (exact match, as oidc-provider requires). */
  redirectUris: string[];
  accounts?: UpstreamAccount[];
  /**
   * The client authentication methods the token endpoint accepts, as discovery lists them in
   * `token_endpoint_auth_methods_supported`; the service's client is registered with the first.
   * By default both secret methods, HTTP Basic first.
   */
  tokenAuthMethods?: Array<'client_secret_basic' | 'client_secret_post'>;
}

export async function startOidcUpstream(options: OidcUpstreamOptions): Promise<OidcUpstream> {
  const Provider = await providerClass();
  const signing = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const foreign = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomUUID();

  const server: Server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  server.on('connection', (socket) => socket.unref());
  const issuer = `http://localhost:${(server.address() as AddressInfo).port}`;

  const upstream: OidcUpstream = {
    issuer,
    clientId: `service-${randomBytes(4).toString('hex')}`,
    clientSecret: randomBytes(24).toString('base64url'),
    accounts: new Map((options.accounts ?? []).map((account) => [account.sub, account])),
    tamper: 'none',
    authorizations: [],
    tokenAuthentications: [],
    signIn: (url, sub) => browse(issuer, url, { sub }),
    decline: (url) => browse(issuer, url, { decline: 'true' }),
    close: async () => {
      const closed = once(server, 'close');
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };

  const tokenAuthMethods = options.tokenAuthMethods ?? ['client_secret_basic', 'client_secret_post'];
  const provider = new Provider(issuer, {
    clientAuthMethods: tokenAuthMethods,
    clients: [
      {
        client_id: upstream.clientId,
        client_secret: upstream.clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: tokenAuthMethods[0],
      },
    ],
    jwks: { keys: [{ ...signing.privateKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' }] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    scopes: ['openid', 'email', 'profile'],
    pkce: { required: () => true },
    adapter: memoryAdapter(),
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: Interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx: unknown, sub: string) => {
      const account = upstream.accounts.get(sub);
      return account && { accountId: sub, claims: () => ({ ...account }) };
    },
  }) as Peer;

  provider.use(async (ctx, next) => {
    if (ctx.path === '/auth' && ctx.method === 'GET') upstream.authorizations.push(new URL(ctx.req.url ?? '/', issuer).searchParams);
    const interaction = /^\/interaction\/([\w-]+)(\/login)?$/.exec(ctx.path);
    if (interaction) {
      ctx.respond = false;
      await answerInteraction(provider, ctx, interaction[2] !== undefined);
      return;
    }
    await next();
    if (ctx.oidc?.route === 'token') upstream.tokenAuthentications.push(authenticationOf(ctx));
    if (ctx.oidc?.route === 'token' && ctx.status === 200 && upstream.tamper !== 'none') {
      const body = ctx.body as { id_token?: string };
      if (body.id_token) body.id_token = tampered(body.id_token, upstream.tamper);
    }
  });
  const tampered = (idToken: string, how: IdTokenTampering): string => {
    const claims = jwt.decode(idToken) as Record<string, unknown>;
    if (how === 'wrong_aud') return jwt.sign({ ...claims, aud: 'another-client' }, signing.privateKey, { algorithm: 'RS256', keyid: kid });
    return jwt.sign(claims, foreign.privateKey, { algorithm: 'RS256', keyid: kid });
  };

  const handle = provider.callback();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => void handle(req, res));
  return upstream;
}

/**
 * The provider's two pages. GET /interaction/{uid}: the login page (a form naming the subject to
 * sign in as, which `signIn` submits), or for a consent prompt, consent given at once to every
 * scope and claim asked. POST /interaction/{uid}/login: signs in the account its `sub` names, or
 * with `decline`, ends the authorization with access_denied.
 */
async function answerInteraction(provider: Peer, ctx: PeerContext, submitted: boolean): Promise<void> {
  const { req, res } = ctx;
  const details = await provider.interactionDetails(req, res);
  let result: Record<string, unknown>;
  if (details.prompt.name === 'login') {
    if (!submitted) {
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<form method="post" action="/interaction/${details.uid}/login"></form>`);
      return;
    }
    const form = new URLSearchParams(await bodyOf(req));
    result = form.has('decline')
      ? { error: 'access_denied', error_description: 'End-User aborted interaction' }
      : { login: { accountId: form.get('sub') ?? '' } };
  } else {
    const grant =
      (details.grantId && (await provider.Grant.find(details.grantId))) ||
      new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    result = { consent: { grantId: await grant.save() } };
  }
  const returnTo = await provider.interactionResult(req, res, result, { mergeWithLastSubmission: details.prompt.name !== 'login' });
  res.writeHead(303, { location: returnTo }).end();
}

/**
 * oidc-provider's storage, in this peer's memory: its codes, tokens, sessions and interactions
 * (the library's own memory adapter is shared by every provider in the process).
 */
function memoryAdapter() {
  const stored = new Map<string, Record<string, unknown>>();
  return class {
    constructor(private readonly model: string) {}
    private key(id: string) {
      return `${this.model}:${id}`;
    }
    upsert(id: string, payload: Record<string, unknown>) {
      stored.set(this.key(id), payload);
      return Promise.resolve();
    }
    find(id: string) {
      return Promise.resolve(stored.get(this.key(id)));
    }
    findByUid(uid: string) {
      return Promise.resolve([...stored].find(([key, payload]) => key.startsWith(`${this.model}:`) && payload.uid === uid)?.[1]);
    }
    findByUserCode(userCode: string) {
      return Promise.resolve([...stored].find(([key, payload]) => key.startsWith(`${this.model}:`) && payload.userCode === userCode)?.[1]);
    }
    consume(id: string) {
      const payload = stored.get(this.key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
      return Promise.resolve();
    }
    destroy(id: string) {
      stored.delete(this.key(id));
      return Promise.resolve();
    }
    revokeByGrantId(grantId: string) {
      for (const [key, payload] of stored) if (payload.grantId === grantId) stored.delete(key);
      return Promise.resolve();
    }
  };
}

/** How a token request authenticated its client: an HTTP Basic `Authorization` header, a secret in the form body, or neither. */
function authenticationOf(ctx: PeerContext): string {
  if (/^basic /i.test(ctx.req.headers.authorization ?? '')) return 'client_secret_basic';
  return ctx.oidc?.body?.client_secret === undefined ? 'none' : 'client_secret_post';
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A browser with an empty cookie jar: follows the provider's redirects, submits its login page with
 * `answer` (`sub`, or `decline`), and stops at the first address outside the provider.
 */
async function browse(issuer: string, start: string, answer: Record<string, string>): Promise<URL> {
  const jar = new Map<string, string>();
  let url = new URL(start);
  let method = 'GET';
  let body: string | undefined;
  for (let hop = 0; hop < 10; hop++) {
    if (url.origin !== issuer) return url;
    const response = await fetch(url, {
      method,
      body,
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair, ...attributes] = cookie.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')).trim(), pair.slice(pair.indexOf('=') + 1).trim()];
      if (attributes.some((attribute) => /^\s*expires=.*1970/i.test(attribute)) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    const location = response.headers.get('location');
    if (location) {
      url = new URL(location, url);
      [method, body] = ['GET', undefined];
      continue;
    }
    const page = await response.text();
    const form = /<form method="post" action="([^"]+)">/.exec(page);
    if (response.status !== 200 || !form)
      throw new Error(`The provider answered ${response.status} at ${url.pathname}: ${page.slice(0, 300)}`);
    url = new URL(form[1], url);
    [method, body] = ['POST', new URLSearchParams(answer).toString()];
  }
  throw new Error('The provider redirected too many times');
}
