import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { ConfigError, loadConfig } from '../src/config/index.js';
import type { components } from '../src/client.js';
import { startTestApp, TEST_SECRET, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';

// Tokens signed with a key pair and published as a JWK Set, verified here as another service would:
// with jose, from the JWKS alone. Also key rotation across a restart and the start-up checks of keys.

type Jose = typeof import('jose');
type Jwks = components['schemas']['JsonWebKeySet'];

const rsaKey = (modulusLength = 2048) => generateKeyPairSync('rsa', { modulusLength });
const ecKey = (namedCurve = 'prime256v1') => generateKeyPairSync('ec', { namedCurve });
const pkcs8 = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();
const spki = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }).toString();
/** A PEM on one line with literal `\n`, as env files and secret stores often hold it. */
const oneLine = (pem: string) => pem.trim().replace(/\n/g, '\\n');

const headerOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8'));
const now = () => Math.floor(Date.now() / 1000);

async function jwksOf(app: TestContext): Promise<{ jwks: Jwks; cacheControl: string | null }> {
  const { data, response } = await app.client.GET('/.well-known/jwks.json');
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return { jwks: data!, cacheControl: response.headers.get('cache-control') };
}

async function me(app: TestContext, token: string) {
  return app.get('/api/auth/me', { token });
}

describe.each([
  // The RSA key in PKCS#8 PEM, the EC key in SEC1 PEM on one line with `\n` escapes; RS256 with the
  // default issuer (APP_URL) and audience, ES256 with both configured.
  {
    algorithm: 'RS256' as const,
    keys: rsaKey(),
    privatePem: (key: KeyObject) => pkcs8(key),
    env: {} as Record<string, string>,
    issuer: 'http://localhost:8000',
    audience: 'account-service',
  },
  {
    algorithm: 'ES256' as const,
    keys: ecKey(),
    privatePem: (key: KeyObject) => oneLine(key.export({ type: 'sec1', format: 'pem' }).toString()),
    env: { JWT_ISSUER: 'https://accounts.example.com', JWT_AUDIENCE: 'https://api.example.com' },
    issuer: 'https://accounts.example.com',
    audience: 'https://api.example.com',
  },
])('ALGORITHM=$algorithm', ({ algorithm, keys, privatePem, env, issuer, audience }) => {
  let app: TestContext;
  let jose: Jose;

  beforeAll(async () => {
    jose = await import('jose');
    app = await startTestApp({ ALGORITHM: algorithm, JWT_PRIVATE_KEY: privatePem(keys.privateKey), ...env });
  });
  afterAll(() => app?.close());

  it('publishes the public key as a JWK Set, cacheable for five minutes, with no private member', async () => {
    const { jwks, cacheControl } = await jwksOf(app);
    expect(cacheControl).toBe('public, max-age=300');
    expect(jwks.keys).toHaveLength(1);
    const [jwk] = jwks.keys;
    expect(jwk).toMatchObject({ kty: algorithm === 'RS256' ? 'RSA' : 'EC', alg: algorithm, use: 'sig' });
    expect(jwk.kid).toBe(await jose.calculateJwkThumbprint(jwk, 'sha256'));
    // The published key is the configured key's public half, nothing more.
    expect(jwk).toEqual({ ...keys.publicKey.export({ format: 'jwk' }), kid: jwk.kid, alg: algorithm, use: 'sig' });
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(jwk).not.toHaveProperty(member);
  });

  it('signs access and refresh tokens that jose verifies from the JWKS alone', async () => {
    const user = await app.register();
    const { data: login } = await app.client.POST('/api/auth/login/json', { body: { email: user.email, password: user.password } });
    const { jwks } = await jwksOf(app);
    const keySet = jose.createLocalJWKSet(jwks);

    expect(headerOf(login!.data.access_token)).toEqual({ alg: algorithm, typ: 'access+jwt', kid: jwks.keys[0].kid });
    expect(headerOf(login!.data.refresh_token)).toEqual({ alg: algorithm, typ: 'refresh+jwt', kid: jwks.keys[0].kid });
    // As the README tells other services to verify them: algorithm, issuer and audience.
    const verifyOptions = { algorithms: [algorithm], issuer, audience };
    const { payload, protectedHeader } = await jose.jwtVerify(login!.data.access_token, keySet, verifyOptions);
    expect(protectedHeader.kid).toBe(jwks.keys[0].kid);
    expect(payload).toMatchObject({
      iss: issuer,
      aud: audience,
      sub: String(user.id),
      email: user.email,
      email_verified: false,
      type: 'access',
      amr: ['pwd'],
      aal: 'aal1',
    });
    expect(payload.exp! - payload.iat!).toBe(30 * 60);
    await expect(jose.jwtVerify(login!.data.refresh_token, keySet, verifyOptions)).resolves.toMatchObject({ payload: { type: 'refresh' } });
    await expect(jose.jwtVerify(login!.data.access_token, keySet, { ...verifyOptions, audience: 'another-service' })).rejects.toThrow(
      /aud/,
    );

    // And the service itself takes them: the access token on /me, the refresh token on refresh.
    expect((await me(app, login!.data.access_token)).body.data.email).toBe(user.email);
    const refreshed = await app.post('/api/auth/refresh', { refresh_token: login!.data.refresh_token });
    expect(refreshed.status).toBe(200);
    // A refreshed token says what its session says, and so does the form login's.
    const again = await jose.jwtVerify(refreshed.body.data.access_token, keySet, verifyOptions);
    expect(again.payload).toMatchObject({ sub: String(user.id), sid: payload.sid, amr: ['pwd'], aal: 'aal1' });
    const form = await app.post(
      '/api/auth/login',
      { grant_type: 'password', username: user.email, password: user.password },
      { form: true },
    );
    expect(form.status).toBe(200);
    const byForm = await jose.jwtVerify(form.body.access_token, keySet, verifyOptions);
    expect(byForm.payload).toMatchObject({ sub: String(user.id), type: 'access', amr: ['pwd'], aal: 'aal1' });
  });

  it('refuses a token without a kid, with an unknown kid, or signed by another key under its kid', async () => {
    const user = await app.register();
    const claims = freshClaims(user.access);
    const { jwks } = await jwksOf(app);
    const other = algorithm === 'RS256' ? rsaKey() : ecKey();

    const header = ACCESS_HEADER;
    const noKid = jwt.sign({ ...claims, jti: randomUUID() }, keys.privateKey, { algorithm, header });
    const unknownKid = jwt.sign({ ...claims, jti: randomUUID() }, keys.privateKey, { algorithm, keyid: 'some-other-key', header });
    const forged = jwt.sign({ ...claims, jti: randomUUID() }, other.privateKey, { algorithm, keyid: jwks.keys[0].kid, header });
    // The public key as an HMAC secret: the classic algorithm confusion.
    const confused = jwt.sign({ ...claims, jti: randomUUID() }, spki(keys.publicKey), {
      algorithm: 'HS256',
      keyid: jwks.keys[0].kid,
      header,
    });
    // Our own key, for another audience or issuer.
    const otherAudience = jwt.sign({ ...claims, aud: 'another-service', jti: randomUUID() }, keys.privateKey, {
      algorithm,
      keyid: jwks.keys[0].kid,
      header,
    });
    const otherIssuer = jwt.sign({ ...claims, iss: 'https://staging.example.com', jti: randomUUID() }, keys.privateKey, {
      algorithm,
      keyid: jwks.keys[0].kid,
      header,
    });
    for (const token of [noKid, unknownKid, forged, confused, otherAudience, otherIssuer])
      expectError(await me(app, token), 401, 'UNAUTHORIZED');

    // The same claims, signed properly, pass: the refusals above are about the key alone.
    const good = jwt.sign({ ...claims, jti: randomUUID() }, keys.privateKey, { algorithm, keyid: jwks.keys[0].kid, header });
    expect((await me(app, good)).status).toBe(200);
  });
});

/** A token's claims, with a fresh expiry, to sign again under another header. */
function freshClaims(token: string) {
  const { iss, aud, sub, email, type, sid, auth_time } = jwt.decode(token) as Record<string, string>;
  return { iss, aud, sub, email, type, sid, auth_time, iat: now(), exp: now() + 600 };
}

/** The header `typ` of the service's access tokens, which it takes no other token for (`alg` is the signer's). */
const ACCESS_HEADER = { typ: 'access+jwt' } as unknown as jwt.JwtHeader;

describe('key rotation', () => {
  it('a restart with a new key (even of another algorithm) keeps accepting tokens of the retired key', async () => {
    const jose = await import('jose');
    const key1 = rsaKey();
    const key2 = ecKey();
    const unrelated = ecKey();
    const a = await startTestApp({ ALGORITHM: 'RS256', JWT_PRIVATE_KEY: pkcs8(key1.privateKey) });
    let b: TestContext | undefined;
    let c: TestContext | undefined;
    try {
      const user = await a.register();
      const { jwks: before } = await jwksOf(a);
      await a.stop();

      // Without the retired key listed, the restart would sign everyone out.
      c = await startTestApp({ ALGORITHM: 'ES256', JWT_PRIVATE_KEY: pkcs8(key2.privateKey) }, { sameDatabaseAs: a });
      expectError(await me(c, user.access), 401, 'UNAUTHORIZED');
      await c.stop();

      // Several retired keys, concatenated, in one variable.
      const previous = `${spki(unrelated.publicKey)}${spki(key1.publicKey)}`;
      b = await startTestApp(
        { ALGORITHM: 'ES256', JWT_PRIVATE_KEY: pkcs8(key2.privateKey), JWT_PREVIOUS_PUBLIC_KEYS: previous },
        { sameDatabaseAs: a },
      );
      const { jwks } = await jwksOf(b);
      expect(jwks.keys.map((k) => k.alg)).toEqual(['ES256', 'ES256', 'RS256']);
      expect(jwks.keys[2]).toEqual(before.keys[0]);
      const current = jwks.keys[0].kid;
      expect(new Set(jwks.keys.map((k) => k.kid)).size).toBe(3);

      // The old access token still works, and still verifies against the new JWKS.
      expect((await me(b, user.access)).body.data.id).toBe(user.id);
      const keySet = jose.createLocalJWKSet(jwks);
      await expect(jose.jwtVerify(user.access, keySet, { algorithms: ['RS256', 'ES256'] })).resolves.toBeDefined();

      // Its refresh token too; what comes back is signed with the new key.
      const refreshed = await b.post('/api/auth/refresh', { refresh_token: user.refresh });
      expect(refreshed.status).toBe(200);
      expect(headerOf(refreshed.body.data.access_token)).toMatchObject({ alg: 'ES256', kid: current });
      expect((await me(b, refreshed.body.data.access_token)).status).toBe(200);

      // A retired key verifies only its own algorithm.
      const { sub, email, sid } = jwt.decode(user.access) as Record<string, string>;
      const wrongAlg = jwt.sign({ sub, email, sid, type: 'access', jti: randomUUID(), exp: now() + 600 }, key1.privateKey, {
        algorithm: 'RS512',
        keyid: jwks.keys[2].kid,
        header: ACCESS_HEADER,
      });
      expectError(await me(b, wrongAlg), 401, 'UNAUTHORIZED');
    } finally {
      await b?.close();
      await c?.close();
      await a.close();
    }
  });
});

describe('ALGORITHM=HS256', () => {
  let app: TestContext;
  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_ENABLED: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_PER_MINUTE: '500' });
  });
  afterAll(() => app?.close());

  it('publishes an empty JWK Set: a shared secret is never published', async () => {
    const { jwks, cacheControl } = await jwksOf(app);
    expect(jwks).toEqual({ keys: [] });
    expect(cacheControl).toBe('public, max-age=300');
  });

  it('signs tokens jose verifies with the shared secret, checking algorithm, issuer (APP_URL) and audience', async () => {
    const jose = await import('jose');
    const user = await app.register();
    const secret = new TextEncoder().encode(TEST_SECRET);
    const options = { algorithms: ['HS256'], issuer: 'http://localhost:8000', audience: 'account-service' };
    const { payload } = await jose.jwtVerify(user.access, secret, options);
    expect(payload).toMatchObject({
      iss: options.issuer,
      aud: options.audience,
      sub: String(user.id),
      email: user.email,
      email_verified: false,
      type: 'access',
    });
    await expect(jose.jwtVerify(user.refresh, secret, options)).resolves.toMatchObject({ payload: { type: 'refresh' } });
    await expect(jose.jwtVerify(user.access, secret, { ...options, audience: 'another-service' })).rejects.toThrow(/aud/);
    await expect(jose.jwtVerify(user.access, secret, { ...options, issuer: 'https://elsewhere.example' })).rejects.toThrow(/iss/);
    await expect(jose.jwtVerify(user.access, secret, { ...options, algorithms: ['HS512'] })).rejects.toThrow(/alg/);
  });

  it('signs without a kid, and ignores one a token brings', async () => {
    const user = await app.register();
    expect(headerOf(user.access)).toEqual({ alg: 'HS256', typ: 'access+jwt' });
    const withKid = jwt.sign({ ...freshClaims(user.access), jti: randomUUID() }, TEST_SECRET, {
      algorithm: 'HS256',
      keyid: 'anything',
      header: ACCESS_HEADER,
    });
    expect((await me(app, withKid)).status).toBe(200);
  });

  it('counts the JWKS against the general budget, not the one for credentials', async () => {
    const { response } = await app.client.GET('/.well-known/jwks.json');
    expect(response.headers.get('ratelimit-limit')).toBe('500');
  });

  it('answers other methods with 405', async () => {
    const res = await app.post('/.well-known/jwks.json', {});
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.allow).toMatch(/GET/);
  });
});

describe('signing keys at start-up', () => {
  const SECRET_KEY = 'x'.repeat(40);
  const rsa = rsaKey();
  const ec = ecKey();

  const problemsOf = (env: Record<string, string>): string[] => {
    try {
      loadConfig({ SECRET_KEY, ...env });
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    return [];
  };

  it('takes OIDC_RSA_PRIVATE_KEY, the RSA key ID tokens are signed with beside an EC key, and says so in production without it', () => {
    const es256 = { ALGORITHM: 'ES256', JWT_PRIVATE_KEY: pkcs8(ec.privateKey) };
    const config = loadConfig({ SECRET_KEY, ...es256, OIDC_RSA_PRIVATE_KEY: oneLine(pkcs8(rsa.privateKey)) });
    expect(config.oidc.rsaSigningKey?.equals(rsa.privateKey)).toBe(true);
    expect(config.oidc.signingKey?.algorithm).toBe('ES256');
    expect(problemsOf({ ...es256, OIDC_RSA_PRIVATE_KEY: pkcs8(ecKey().privateKey) })).toEqual([
      'OIDC_RSA_PRIVATE_KEY is an EC key; it must be an RSA private key (RS256)',
    ]);
    expect(
      problemsOf({ ALGORITHM: 'RS256', JWT_PRIVATE_KEY: pkcs8(rsa.privateKey), OIDC_RSA_PRIVATE_KEY: pkcs8(rsaKey().privateKey) }),
    ).toEqual([
      'OIDC_RSA_PRIVATE_KEY is set but ID tokens are signed with an EC key only beside it: ALGORITHM=ES256, or an EC OIDC_PRIVATE_KEY; remove it',
    ]);
    const production = {
      SECRET_KEY,
      NODE_ENV: 'production',
      SMTP_URL: 'smtps://mail.example.com',
      APP_URL: 'https://accounts.example.com',
    };
    expect(loadConfig({ ...production, ...es256 }).warnings).toEqual([expect.stringContaining('set OIDC_RSA_PRIVATE_KEY')]);
    expect(loadConfig({ ...production, ...es256, OIDC_RSA_PRIVATE_KEY: pkcs8(rsa.privateKey) }).warnings).toEqual([]);
  });

  it('loads an RSA or P-256 key, in PKCS#8, PKCS#1 or SEC1 PEM, with real newlines or `\\n` escapes', () => {
    const cases = [
      { ALGORITHM: 'RS256', JWT_PRIVATE_KEY: pkcs8(rsa.privateKey) },
      { ALGORITHM: 'rs256', JWT_PRIVATE_KEY: oneLine(rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()) },
      { ALGORITHM: 'ES256', JWT_PRIVATE_KEY: oneLine(pkcs8(ec.privateKey)) },
      { ALGORITHM: 'ES256', JWT_PRIVATE_KEY: ec.privateKey.export({ type: 'sec1', format: 'pem' }).toString() },
    ];
    for (const env of cases) {
      const config = loadConfig({ SECRET_KEY, ...env });
      expect(config.tokens.algorithm).toBe(env.ALGORITHM.toUpperCase());
      expect(config.tokens.keys.signing.key.type).toBe('private');
      expect(config.tokens.keys.signing.key.equals(env.ALGORITHM === 'ES256' ? ec.privateKey : rsa.privateKey)).toBe(true);
    }
    const config = loadConfig({
      SECRET_KEY,
      ALGORITHM: 'ES256',
      JWT_PRIVATE_KEY: pkcs8(ec.privateKey),
      JWT_PREVIOUS_PUBLIC_KEYS: oneLine(spki(rsa.publicKey) + spki(ec.publicKey)),
    });
    // The current key first; the retired EC key is the current one, so it is listed once.
    expect(config.tokens.keys.jwks.keys.map((key) => key.kty)).toEqual(['EC', 'RSA']);
  });

  it('requires the key for RS256 and ES256, and refuses one with HS*', () => {
    expect(problemsOf({ ALGORITHM: 'RS256' })).toEqual(['JWT_PRIVATE_KEY is required when ALGORITHM is RS256 (a PEM private key)']);
    expect(problemsOf({ ALGORITHM: 'ES256' })).toEqual(['JWT_PRIVATE_KEY is required when ALGORITHM is ES256 (a PEM private key)']);
    expect(problemsOf({ JWT_PRIVATE_KEY: pkcs8(rsa.privateKey) })).toEqual([
      expect.stringMatching(/^JWT_PRIVATE_KEY is set but ALGORITHM is HS256/),
    ]);
    expect(problemsOf({ JWT_PREVIOUS_PUBLIC_KEYS: spki(rsa.publicKey) })).toEqual([
      expect.stringMatching(/^JWT_PREVIOUS_PUBLIC_KEYS is set but ALGORITHM is HS256/),
    ]);
    expect(() => loadConfig({ SECRET_KEY, ALGORITHM: 'RS256' })).toThrow(ConfigError);
  });

  it('refuses a key of the wrong type, size or curve, saying which', () => {
    const one = (algorithm: string, key: KeyObject) => problemsOf({ ALGORITHM: algorithm, JWT_PRIVATE_KEY: pkcs8(key) });
    expect(one('RS256', ec.privateKey)).toEqual(['JWT_PRIVATE_KEY is an EC key on prime256v1, which signs ES256, but ALGORITHM is RS256']);
    expect(one('ES256', rsa.privateKey)).toEqual(['JWT_PRIVATE_KEY is an RSA key of 2048 bits, which signs RS256, but ALGORITHM is ES256']);
    expect(one('RS256', rsaKey(1024).privateKey)).toEqual(['JWT_PRIVATE_KEY is an RSA key of 1024 bits; RS256 needs at least 2048 bits']);
    expect(one('ES256', ecKey('secp384r1').privateKey)).toEqual([
      'JWT_PRIVATE_KEY is an EC key on secp384r1; ES256 needs the curve P-256 (prime256v1)',
    ]);
    expect(one('ES256', generateKeyPairSync('ed25519').privateKey)).toEqual([
      'JWT_PRIVATE_KEY is an ed25519 key; use an RSA key (RS256) or an EC key on P-256 (ES256)',
    ]);
  });

  it('refuses what is not a usable PEM private key', () => {
    const garbage = (pem: string) => problemsOf({ ALGORITHM: 'RS256', JWT_PRIVATE_KEY: pem });
    expect(garbage('not a key at all')).toEqual(['JWT_PRIVATE_KEY is not a PEM private key (-----BEGIN PRIVATE KEY----- ...)']);
    expect(garbage(spki(rsa.publicKey))).toEqual(['JWT_PRIVATE_KEY is not a PEM private key (-----BEGIN PRIVATE KEY----- ...)']);
    expect(garbage('-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----')).toEqual([
      'JWT_PRIVATE_KEY could not be read as a PEM private key',
    ]);
    for (const type of ['pkcs8', 'pkcs1'] as const) {
      const encrypted = rsa.privateKey.export({ type, format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' }).toString();
      expect(garbage(encrypted)).toEqual(['JWT_PRIVATE_KEY is encrypted; give the key without a passphrase']);
    }
  });

  it('refuses retired keys that are not PEM public keys of a usable type, naming the bad one', () => {
    const previous = (text: string) =>
      problemsOf({ ALGORITHM: 'RS256', JWT_PRIVATE_KEY: pkcs8(rsa.privateKey), JWT_PREVIOUS_PUBLIC_KEYS: text });
    const valid = spki(ec.publicKey);
    expect(previous('garbage')).toEqual([expect.stringMatching(/^JWT_PREVIOUS_PUBLIC_KEYS must hold one or more PEM public keys/)]);
    // A block cut short is refused, not skipped.
    expect(previous(valid + valid.slice(0, 60))).toEqual([
      expect.stringMatching(/^JWT_PREVIOUS_PUBLIC_KEYS must hold one or more PEM public keys/),
    ]);
    expect(previous(valid + pkcs8(rsa.privateKey))).toEqual(['JWT_PREVIOUS_PUBLIC_KEYS key 2 is a private key; list public keys only']);
    expect(previous(`${valid}-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n`)).toEqual([
      'JWT_PREVIOUS_PUBLIC_KEYS key 2 could not be read as a PEM public key',
    ]);
    expect(previous(spki(rsaKey(1024).publicKey))).toEqual([
      'JWT_PREVIOUS_PUBLIC_KEYS key 1 is an RSA key of 1024 bits; RS256 needs at least 2048 bits',
    ]);
  });

  it('still requires SECRET_KEY in production, which seals mail and more', () => {
    const problems = (() => {
      try {
        loadConfig({
          NODE_ENV: 'production',
          SMTP_URL: 'smtps://mail.example.com',
          ALGORITHM: 'ES256',
          JWT_PRIVATE_KEY: pkcs8(ec.privateKey),
        });
      } catch (error) {
        return (error as ConfigError).problems;
      }
      return [];
    })();
    expect(problems).toEqual([expect.stringContaining('SECRET_KEY is required')]);
  });
});
