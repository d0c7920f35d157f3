import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

/** A person with a GitHub account: the numeric id is the subject; e-mails as /user/emails lists them. */
export interface GithubAccount {
  id: number;
  login: string;
  name?: string | null;
  /** The public e-mail of the profile (/user), often null on GitHub. */
  email?: string | null;
  emails: GithubEmail[];
}

/**
 * A GitHub-shaped OAuth2 server the test runs on localhost: /login/oauth/authorize (the browser's
 * GitHub session says who is signed in; authorized at once), /login/oauth/access_token (client,
 * code, redirect URI and PKCE verifier checked, each code good once; refusals answered as GitHub
 * does, 200 with an `error`), /user and /user/emails. No ID token and no discovery.
 */
export interface GithubUpstream {
  /** `http://localhost:PORT`. */
  url: string;
  clientId: string;
  clientSecret: string;
  /** The people who can sign in, by login; a test may add to it at any time. */
  accounts: Map<string, GithubAccount>;
  /** Every authorization request's query, in order. */
  authorizations: URLSearchParams[];
  /** Token requests refused, with GitHub's error code. */
  refusals: string[];
  /**
   * A browser signed in to GitHub as `login` follows `authorizationUrl` (the service's 302 target):
   * returns where GitHub sends it back (the service's callback with `code` and `state`).
   */
  signIn(authorizationUrl: string, login: string): Promise<URL>;
  /** Stops listening and drops open connections: the provider is unreachable from now on. */
  close(): Promise<void>;
}

export interface GithubUpstreamOptions {
  accounts?: GithubAccount[];
  /** Who is signed in when the browser brings no GitHub session. */
  signedIn?: () => GithubAccount | undefined;
}

const SESSION_COOKIE = 'user_session';

export async function startGithubUpstream(options: GithubUpstreamOptions = {}): Promise<GithubUpstream> {
  const codes = new Map<string, { params: URLSearchParams; account: GithubAccount }>();
  const accessTokens = new Map<string, GithubAccount>();
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  server.on('connection', (socket) => socket.unref());
  const url = `http://localhost:${(server.address() as AddressInfo).port}`;

  const github: GithubUpstream = {
    url,
    clientId: `Iv1.${randomBytes(8).toString('hex')}`,
    clientSecret: randomBytes(20).toString('hex'),
    accounts: new Map((options.accounts ?? []).map((account) => [account.login, account])),
    authorizations: [],
    refusals: [],
    async signIn(authorizationUrl, login) {
      const response = await fetch(authorizationUrl, { redirect: 'manual', headers: { cookie: `${SESSION_COOKIE}=${login}` } });
      const location = response.headers.get('location');
      if (response.status !== 302 || !location) throw new Error(`GitHub answered ${response.status}: ${await response.text()}`);
      return new URL(location);
    },
    close: async () => {
      const closed = once(server, 'close');
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const at = new URL(req.url ?? '/', url);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (at.pathname === '/login/oauth/authorize') {
        github.authorizations.push(at.searchParams);
        const login = /(?:^|;\s*)user_session=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
        const account = login === undefined ? options.signedIn?.() : github.accounts.get(login);
        if (!account || at.searchParams.get('client_id') !== github.clientId) return json(res, 404, { message: 'Not Found' });
        const code = randomBytes(10).toString('hex');
        codes.set(code, { params: at.searchParams, account: structuredClone(account) });
        const back = new URL(at.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', at.searchParams.get('state') ?? '');
        res.writeHead(302, { location: back.href }).end();
        return;
      }
      if (at.pathname === '/login/oauth/access_token' && req.method === 'POST') {
        // GitHub answers a refused exchange with 200 and an error in the body.
        const refuse = (error: string) => {
          github.refusals.push(error);
          json(res, 200, { error, error_description: error.replace(/_/g, ' '), error_uri: 'https://docs.github.com/apps' });
        };
        const basic = req.headers.authorization?.startsWith('Basic ')
          ? Buffer.from(req.headers.authorization.slice(6), 'base64').toString().split(':').map(decodeURIComponent)
          : undefined;
        const [clientId, clientSecret] = basic ?? [body.get('client_id'), body.get('client_secret')];
        if (clientId !== github.clientId || clientSecret !== github.clientSecret) return refuse('incorrect_client_credentials');
        const issued = codes.get(body.get('code') ?? '');
        if (!issued) return refuse('bad_verification_code');
        codes.delete(body.get('code')!);
        if (body.get('redirect_uri') !== issued.params.get('redirect_uri')) return refuse('redirect_uri_mismatch');
        const verifier = body.get('code_verifier') ?? '';
        if (createHash('sha256').update(verifier).digest('base64url') !== issued.params.get('code_challenge'))
          return refuse('bad_verification_code');
        const accessToken = `gho_${randomBytes(18).toString('hex')}`;
        accessTokens.set(accessToken, issued.account);
        return json(res, 200, { access_token: accessToken, token_type: 'bearer', scope: issued.params.get('scope') ?? '' });
      }
      const account = accessTokens.get((req.headers.authorization ?? '').replace(/^Bearer /i, ''));
      if (at.pathname === '/user' || at.pathname === '/user/emails') {
        if (!account) return json(res, 401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
        if (at.pathname === '/user/emails') return json(res, 200, account.emails);
        return json(res, 200, { id: account.id, login: account.login, name: account.name ?? null, email: account.email ?? null });
      }
      json(res, 404, { message: 'Not Found' });
    });
  });
  return github;
}

/** The settings that register this server as an `oauth2` provider (the GitHub preset's URLs, on localhost). */
export function githubProviderSettings(server: { url: string; clientId: string; clientSecret: string }, slug = 'github') {
  return {
    slug,
    client_id: server.clientId,
    client_secret: server.clientSecret,
    authorization_url: `${server.url}/login/oauth/authorize`,
    token_url: `${server.url}/login/oauth/access_token`,
    userinfo_url: `${server.url}/user`,
    emails_url: `${server.url}/user/emails`,
  };
}
