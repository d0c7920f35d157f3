import { createHash, generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { startGithubUpstream } from './github-upstream.js';

/** The person the issuer signs in next, as an OpenID Connect provider describes them. */
export interface Person {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

/** How the issuer misbehaves in the ID tokens it signs, for the checks the service must make. */
export type Misbehaviour = 'none' | 'wrong_key' | 'wrong_aud' | 'wrong_nonce' | 'wrong_iss' | 'expired';

/**
 * An OpenID Connect provider the test runs on localhost: discovery, JWKS, an authorization
 * endpoint that signs in `person` at once (no login page), a token endpoint that checks the
 * client, the code, the redirect URI and the PKCE verifier, and user-info. Each code is good once.
 * With `shape: 'github'` it is the GitHub-shaped OAuth2 server of ./github-upstream.ts, signing in
 * `person` with `emails`. (./oidc-upstream.ts is an OpenID provider built on oidc-provider.)
 */
export interface UpstreamIssuer {
  /** `http://localhost:PORT`. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  person: Person;
  /** For the GitHub shape: the answer of /user/emails. */
  emails: { email: string; primary: boolean; verified: boolean }[];
  misbehave: Misbehaviour;
  /** Every authorization request's query, in order. */
  authorizations: URLSearchParams[];
  /** Token requests refused, with the reason. */
  refusals: string[];
  close(): Promise<void>;
}

export async function startUpstreamIssuer(options: { shape?: 'oidc' | 'github' } = {}): Promise<UpstreamIssuer> {
  return options.shape === 'github' ? githubShaped() : openIdShaped();
}

async function githubShaped(): Promise<UpstreamIssuer> {
  const github = await startGithubUpstream({
    signedIn: () => ({
      id: Number(issuer.person.sub),
      login: `user${issuer.person.sub}`,
      name: issuer.person.name ?? null,
      email: issuer.person.email ?? null,
      emails: issuer.emails,
    }),
  });
  const issuer: UpstreamIssuer = {
    issuer: github.url,
    clientId: github.clientId,
    clientSecret: github.clientSecret,
    person: { sub: 'someone' },
    emails: [],
    misbehave: 'none',
    authorizations: github.authorizations,
    refusals: github.refusals,
    close: () => github.close(),
  };
  return issuer;
}

async function openIdShaped(): Promise<UpstreamIssuer> {
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const foreign = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomUUID();
  const codes = new Map<string, { params: URLSearchParams; person: Person }>();
  const accessTokens = new Map<string, Person>();
  const issuer: UpstreamIssuer = {
    issuer: '',
    clientId: `client-${randomBytes(4).toString('hex')}`,
    clientSecret: randomBytes(16).toString('hex'),
    person: { sub: 'someone' },
    emails: [],
    misbehave: 'none',
    authorizations: [],
    refusals: [],
    close: async () => {},
  };
  const paths = { authorize: '/authorize', token: '/token', userinfo: '/userinfo' };

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const signIdToken = (person: Person, nonce: string | null) => {
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      ...person,
      iss: issuer.misbehave === 'wrong_iss' ? `${issuer.issuer}/other` : issuer.issuer,
      aud: issuer.misbehave === 'wrong_aud' ? 'someone-else' : issuer.clientId,
      nonce: issuer.misbehave === 'wrong_nonce' ? 'not-the-nonce' : nonce,
      iat: now - (issuer.misbehave === 'expired' ? 7200 : 0),
      exp: issuer.misbehave === 'expired' ? now - 3600 : now + 300,
    };
    const signer: KeyObject = issuer.misbehave === 'wrong_key' ? foreign.privateKey : key.privateKey;
    return jwt.sign(claims, signer, { algorithm: 'RS256', keyid: kid });
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', issuer.issuer);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (url.pathname === '/.well-known/openid-configuration') {
        return json(res, 200, {
          issuer: issuer.issuer,
          authorization_endpoint: `${issuer.issuer}${paths.authorize}`,
          token_endpoint: `${issuer.issuer}${paths.token}`,
          userinfo_endpoint: `${issuer.issuer}${paths.userinfo}`,
          jwks_uri: `${issuer.issuer}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
        });
      }
      if (url.pathname === '/jwks')
        return json(res, 200, { keys: [{ ...key.publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' }] });
      if (url.pathname === paths.authorize) {
        issuer.authorizations.push(url.searchParams);
        const code = randomBytes(16).toString('hex');
        codes.set(code, { params: url.searchParams, person: { ...issuer.person } });
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state') ?? '');
        res.writeHead(302, { location: back.href }).end();
        return;
      }
      if (url.pathname === paths.token && req.method === 'POST') {
        const refuse = (reason: string) => {
          issuer.refusals.push(reason);
          json(res, 400, { error: 'invalid_grant', error_description: reason });
        };
        const basic = req.headers.authorization?.startsWith('Basic ')
          ? Buffer.from(req.headers.authorization.slice(6), 'base64').toString().split(':').map(decodeURIComponent)
          : undefined;
        const [clientId, clientSecret] = basic ?? [body.get('client_id'), body.get('client_secret')];
        if (clientId !== issuer.clientId || clientSecret !== issuer.clientSecret) return refuse('client');
        const issued = codes.get(body.get('code') ?? '');
        if (!issued) return refuse('code');
        codes.delete(body.get('code')!);
        if (body.get('redirect_uri') !== issued.params.get('redirect_uri')) return refuse('redirect_uri');
        const verifier = body.get('code_verifier') ?? '';
        if (createHash('sha256').update(verifier).digest('base64url') !== issued.params.get('code_challenge'))
          return refuse('code_verifier');
        const accessToken = randomBytes(16).toString('hex');
        accessTokens.set(accessToken, issued.person);
        const idToken = signIdToken(issued.person, issued.params.get('nonce'));
        return json(res, 200, { access_token: accessToken, token_type: 'bearer', expires_in: 300, id_token: idToken });
      }
      const person = accessTokens.get((req.headers.authorization ?? '').replace(/^Bearer /i, ''));
      if (url.pathname === paths.userinfo) {
        if (!person) return json(res, 401, { error: 'invalid_token' });
        return json(res, 200, person);
      }
      json(res, 404, { error: 'not_found' });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  issuer.issuer = `http://localhost:${(server.address() as AddressInfo).port}`;
  issuer.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  server.on('connection', (socket) => socket.unref());
  return issuer;
}
