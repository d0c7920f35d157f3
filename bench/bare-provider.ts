/**
 * The provider's ceiling: oidc-provider alone, the package and version the service runs, with the
 * library's own in-memory adapter and the service's configuration (src/oidc/provider.ts) wherever it
 * changes the work a request does: the same scopes and claims, ID tokens carrying the scopes' claims,
 * ES256 ID tokens, opaque access tokens with the same lifetimes, client credentials, introspection,
 * revocation and userinfo on, every refresh rotating its token, PKCE for every client, and the bench's
 * application as a confidential client authenticating with client_secret_basic. Nothing of the service
 * is imported: no database, no hosted pages, no organisations, no patches of the library's models.
 *
 *   /oauth2/*, /.well-known/*  the provider, at the service's paths
 *   GET  /health/live          200, for the bench to know it is up
 *   POST /bench/tokens         tokens made directly (see `mint`)
 *
 * Its accounts are the bench's users as bench/run.ts seeds them, held in a Map: ids 1 to USERS (1,000),
 * `bench<id>@example.com`, `Bench User <id>`, e-mail verified.
 *
 * Environment: PORT, OIDC_PRIVATE_KEY (an EC P-256 key, PEM), CLIENT_ID, CLIENT_SECRET, REDIRECT_URI,
 * USERS. One process only: its tokens live in its memory, which another process would not see.
 */
import { createPrivateKey, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Provider, { errors } from 'oidc-provider';

const PORT = Number(process.env.PORT ?? 8002);
/** Its own address, as the service's rows have theirs. */
const ISSUER = `http://127.0.0.1:${PORT}`;
// The service's defaults (ACCESS_TOKEN_EXPIRE_MINUTES, REFRESH_TOKEN_EXPIRE_DAYS, SESSION_MAX_DAYS), which the bench keeps.
const ACCESS_TOKEN_SECONDS = 30 * 60;
const REFRESH_TOKEN_SECONDS = 7 * 24 * 3600;
const SESSION_SECONDS = 30 * 24 * 3600;
const SCOPES = ['openid', 'offline_access', 'profile', 'email', 'organizations'];

const clientId = process.env.CLIENT_ID ?? '';
const key = createPrivateKey(process.env.OIDC_PRIVATE_KEY ?? '');

interface Account {
  name: string;
  email: string;
  email_verified: boolean;
  updated_at: number;
}

const started = Math.floor(Date.now() / 1000);
const accounts = new Map<string, Account>();
for (let id = 1; id <= Number(process.env.USERS ?? 1000); id++) {
  accounts.set(String(id), {
    name: `Bench User ${id}`,
    email: `bench${id}@example.com`,
    email_verified: true,
    updated_at: started - id * 60,
  });
}
const accountIds = [...accounts.keys()];

const configuration = {
  clients: [
    {
      client_id: clientId,
      client_secret: process.env.CLIENT_SECRET,
      client_name: 'Bench',
      redirect_uris: [process.env.REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      response_types: ['code'],
      scope: 'openid profile email offline_access',
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  async findAccount(_ctx: unknown, sub: string) {
    const account = accounts.get(sub);
    if (!account) return undefined;
    return { accountId: sub, claims: async () => ({ sub, ...account }) };
  },
  acrValues: ['aal1', 'aal2'],
  claims: {
    openid: ['sub', 'auth_time', 'acr', 'amr', 'org_id', 'org_role'],
    profile: ['name', 'updated_at'],
    email: ['email', 'email_verified'],
    organizations: ['organizations'],
  },
  conformIdTokenClaims: false,
  scopes: SCOPES,
  responseTypes: ['code'],
  clientDefaults: {
    grant_types: ['authorization_code'],
    response_types: ['code'],
    id_token_signed_response_alg: 'ES256',
    token_endpoint_auth_method: 'client_secret_basic',
  },
  enabledJWA: { idTokenSigningAlgValues: ['ES256'] },
  jwks: { keys: [{ ...key.export({ format: 'jwk' }), alg: 'ES256', use: 'sig' }] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  pkce: { required: () => true },
  allowOmittingSingleRegisteredRedirectUri: false,
  rotateRefreshToken: true,
  ttl: {
    AccessToken: ACCESS_TOKEN_SECONDS,
    ClientCredentials: ACCESS_TOKEN_SECONDS,
    AuthorizationCode: 60,
    IdToken: 3600,
    Interaction: 3600,
    RefreshToken: REFRESH_TOKEN_SECONDS,
    Session: SESSION_SECONDS,
    Grant: SESSION_SECONDS,
  },
  features: {
    devInteractions: { enabled: false },
    // On, as in the service, whose APIs this server has none of: every indicator is refused.
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: () => {
        throw new errors.InvalidTarget('no API has this resource indicator');
      },
    },
    introspection: {
      enabled: true,
      allowedPolicy: (_ctx: unknown, client: { clientId: string; clientAuthMethod: string }, token: { clientId?: string }) =>
        client.clientAuthMethod !== 'none' || token.clientId === client.clientId,
    },
    revocation: {
      enabled: true,
      allowedPolicy: (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) => token.clientId === client.clientId,
    },
    userinfo: { enabled: true },
    clientCredentials: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/oauth2/interaction/${interaction.uid}` },
  routes: {
    authorization: '/oauth2/authorize',
    token: '/oauth2/token',
    userinfo: '/oauth2/userinfo',
    revocation: '/oauth2/revoke',
    introspection: '/oauth2/introspect',
    end_session: '/oauth2/end_session',
    jwks: '/.well-known/jwks.json',
  },
};

// The library warns at start that its in-memory adapter is for development only: that adapter is the
// point of this server, so the line is left out of the bench's output.
const warn = console.warn;
console.warn = (...args: unknown[]) => {
  if (typeof args[0] === 'string' && args[0].includes('in-memory adapter')) return;
  warn(...args);
};
const provider = new Provider(ISSUER, configuration);
console.warn = warn;

let next = 0;

/**
 * The tokens a code's exchange for the bench's client would have given an account, made with the
 * provider's own models and saved in its memory: the grant, and for a scope without offline_access the
 * provider session the access token is bound to (the library's default, as for the service's tokens),
 * with offline_access a refresh token instead. The service's tokens come from sign-ins through its hosted
 * pages; this server has no sign-in, and what it keeps is gone when it stops, so the bench asks it
 * here for the tokens its rows present.
 */
async function mint(scope: string): Promise<{ access_token: string; refresh_token?: string }> {
  const client = await provider.Client.find(clientId);
  const accountId = accountIds[next++ % accountIds.length];
  const offline = scope.split(' ').includes('offline_access');
  const grant = new provider.Grant({ accountId, clientId });
  grant.addOIDCScope(scope);
  const grantId: string = await grant.save();
  const signedIn = { acr: 'aal1', amr: ['pwd'], authTime: Math.floor(Date.now() / 1000) };
  const sid = randomBytes(16).toString('base64url');
  const session = new provider.Session({
    accountId,
    loginTs: signedIn.authTime,
    acr: signedIn.acr,
    amr: signedIn.amr,
    authorizations: { [clientId]: { grantId, sid } },
  });
  if (!offline) await session.save(SESSION_SECONDS);
  const common = { accountId, client, grantId, gty: 'authorization_code', scope, sessionUid: session.uid, sid };
  const accessToken = new provider.AccessToken({ ...common, expiresWithSession: !offline });
  const tokens: { access_token: string; refresh_token?: string } = { access_token: await accessToken.save() };
  if (offline) tokens.refresh_token = await new provider.RefreshToken({ ...common, ...signedIn, rotations: 0 }).save();
  return tokens;
}

async function readJson(req: IncomingMessage): Promise<{ count?: number; scope?: string }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const handle = provider.callback();
createServer((req, res) => {
  if (req.url === '/health/live') return send(res, 200, { status: 'alive' });
  if (req.method === 'POST' && req.url === '/bench/tokens') {
    void (async () => {
      const { count = 1, scope = 'openid profile email' } = await readJson(req);
      const tokens = [];
      for (let i = 0; i < count; i++) tokens.push(await mint(scope));
      send(res, 200, { tokens });
    })().catch((error: unknown) => send(res, 500, { error: String(error) }));
    return;
  }
  void handle(req, res);
}).listen(PORT, '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
