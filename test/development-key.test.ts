import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Secret, TOTP } from 'otpauth';
import { suiteDatabase, uniqueEmail, type SuiteDatabase } from './support/app.js';
import { relyingPartyLibraries, type OpenIdClient } from './support/relying-party.js';
import { startServer, type Running } from './support/server.js';

/*
 * A development start without SECRET_KEY, as `make run` does it: the key is made once and kept in
 * DATA_DIR, so that a restart keeps second factors and client secrets working, and the command line
 * seals with the server's key without being given one. Every process here is a real one.
 */

jest.setTimeout(240_000);

const ROOT = join(import.meta.dirname, '..');
const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };
const listening = (line: Record<string, any>) => typeof line.msg === 'string' && line.msg.startsWith('listening on');
const codeFor = (secret: string, atMs: number) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: atMs });

let database: SuiteDatabase;
let dataDir: string;
let oidc: OpenIdClient;
let env: Record<string, string>;
let server: Running | undefined;

/** The settings of a development start: no SECRET_KEY, no NODE_ENV, DATA_DIR for the key (and the embedded database). */
function developmentEnv(): Record<string, string> {
  return { ...database.env, DATA_DIR: dataDir, NODE_ENV: '', SECRET_KEY: '', ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password };
}

async function start(): Promise<Running> {
  server = await startServer(env);
  await server.waitFor(listening, 120_000);
  return server;
}

async function stop(): Promise<void> {
  const running = server!;
  server = undefined;
  running.child.kill('SIGTERM');
  expect(await running.exited).toBe(0);
}

/** The service as a browser on this machine opens it: at the default APP_URL, http://localhost:PORT. */
async function call(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://localhost:${server!.port}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** `npm run cli -- …` from the sources, with the same settings as the server. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', './test/support/ts-register.mjs', 'src/cli/index.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, BCRYPT_COST: '4', LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** A client-credentials token for the client, through a certified relying party and the server's discovery document. */
async function clientCredentials(clientId: string, secret: string): Promise<string> {
  const config = await oidc.discovery(new URL(`http://localhost:${server!.port}`), clientId, undefined, oidc.ClientSecretBasic(secret), {
    execute: [oidc.allowInsecureRequests],
  });
  return (await oidc.clientCredentialsGrant(config)).access_token;
}

beforeAll(async () => {
  ({ oidc } = await relyingPartyLibraries());
  database = await suiteDatabase();
  // The embedded database's folder keeps the key beside it; with PostgreSQL the key has a folder of its own.
  dataDir = database.env.DATA_DIR ?? (await mkdtemp(join(tmpdir(), 'account-data-')));
  env = developmentEnv();
});

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await database.drop();
  if (database.env.DATA_DIR === undefined) await rm(dataDir, { recursive: true, force: true });
});

describe('a development start without SECRET_KEY', () => {
  let user: { email: string; password: string; secret: string };
  let admin: string;
  let apiClient: { id: string; secret: string };
  let cliClient: { id: string; secret: string };

  it('is at http://localhost:PORT, where browsers offer passkeys: the address it prints, the issuer and the hosted pages', async () => {
    await start();
    const port = server!.port;
    expect(server!.lines.find(listening)?.msg).toBe(`listening on http://localhost:${port}`);
    const discovery = await call('GET', '/.well-known/openid-configuration');
    expect(discovery.body).toMatchObject({
      issuer: `http://localhost:${port}`,
      authorization_endpoint: expect.stringMatching(new RegExp(`^http://localhost:${port}/`)),
    });
  });

  it('before the restart: a user enrols TOTP and an admin makes a confidential client', async () => {
    const email = uniqueEmail('restart');
    const registered = await call('POST', '/api/auth/register', { email, password: 'restart-password-1', name: 'Restart' });
    expect(registered.status).toBe(201);
    const access = registered.body.data.access_token;
    const started = await call('POST', '/api/auth/mfa/totp', { name: 'Phone' }, access);
    expect(started.status).toBe(201);
    const secret = new URL(started.body.data.otpauth_url).searchParams.get('secret')!;
    const confirmed = await call(
      'POST',
      `/api/auth/mfa/totp/${started.body.data.factor_id}/confirm`,
      { code: codeFor(secret, Date.now()) },
      access,
    );
    expect(confirmed.status).toBe(200);
    user = { email, password: 'restart-password-1', secret };

    admin = (await call('POST', '/api/auth/login/json', ADMIN)).body.data.access_token;
    const created = await call(
      'POST',
      '/api/oauth/clients',
      { name: 'Reports', type: 'confidential', grant_types: ['client_credentials'], redirect_uris: [] },
      admin,
    );
    expect(created.status).toBe(201);
    apiClient = { id: created.body.data.client_id, secret: created.body.data.client_secret };
    const provider = await call(
      'POST',
      '/api/identity-providers',
      { slug: 'github', client_id: 'Iv1.0123456789abcdef', client_secret: 'github-secret' },
      admin,
    );
    expect(provider.status).toBe(201);
    expect(await clientCredentials(apiClient.id, apiClient.secret)).toEqual(expect.any(String));
    await stop();
  });

  it("the command line's oauth-clients commands run without being given a key, with the server's", async () => {
    const listed = await cli(['oauth-clients', 'list']);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(listed.stdout).toContain(`${apiClient.id}  Reports (confidential)`);

    const created = await cli(['oauth-clients', 'create', '--name', 'Batch', '--type', 'confidential', '--grant', 'client_credentials']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const id = /^(\S+) {2}Batch/m.exec(created.stdout)?.[1];
    const secret = /^client_secret (\S+) \(shown this once\)$/m.exec(created.stdout)?.[1];
    expect({ id, secret }).toEqual({ id: expect.any(String), secret: expect.any(String) });
    cliClient = { id: id!, secret: secret! };
  });

  it('after the restart: the TOTP code is accepted and both clients get tokens with their secrets', async () => {
    await start();
    const login = await call('POST', '/api/auth/login/json', { email: user.email, password: user.password });
    expect(login.status).toBe(403);
    expect(login.body.error.code).toBe('MFA_REQUIRED');
    // The next step's code: the one confirmed above may be this step's, and each step is taken once.
    const verified = await call('POST', '/api/auth/mfa/verify', {
      mfa_token: login.body.error.mfa_token,
      method: 'totp',
      code: codeFor(user.secret, Date.now() + 30_000),
    });
    expect(verified.status).toBe(200);
    expect(verified.body.data.access_token).toEqual(expect.any(String));

    expect(await clientCredentials(apiClient.id, apiClient.secret)).toEqual(expect.any(String));
    expect(await clientCredentials(cliClient.id, cliClient.secret)).toEqual(expect.any(String));
  });

  it('has kept the key it made on the first start in DATA_DIR for this user alone, and says where', async () => {
    const line = server!.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('SECRET_KEY is not set'));
    expect(line?.msg).toBe(
      `SECRET_KEY is not set: using the development key kept in ${join(dataDir, 'secret-key')}; production needs SECRET_KEY`,
    );
    const file = await stat(join(dataDir, 'secret-key'));
    expect(file.mode & 0o777).toBe(0o600);
    expect((await readFile(join(dataDir, 'secret-key'), 'utf8')).trim()).toMatch(/^[A-Za-z0-9_-]{86}$/);
  });

  it('a key that no longer opens what was sealed is a clear answer and a clear log line, never a wrong code', async () => {
    await stop();
    await writeFile(join(dataDir, 'secret-key'), `${'A'.repeat(86)}\n`);
    await start();
    const login = await call('POST', '/api/auth/login/json', { email: user.email, password: user.password });
    const verified = await call('POST', '/api/auth/mfa/verify', {
      mfa_token: login.body.error.mfa_token,
      method: 'totp',
      code: codeFor(user.secret, Date.now() + 30_000),
    });
    expect(verified).toEqual({
      status: 500,
      body: {
        success: false,
        error: {
          code: 'INTERNAL_ERROR',
          message:
            'A secret kept by the service cannot be opened with its current SECRET_KEY; an administrator must restore the key it was sealed with',
        },
      },
    });
    const logged = await server!.waitFor((line) => line.level === 50 && line.err?.message?.includes('a TOTP secret'));
    expect(logged.err.message).toBe(
      'a TOTP secret does not open with SECRET_KEY: it was sealed under another key (SECRET_KEY changed) or altered',
    );

    // The token endpoint answers in OAuth's terms, with the service's words rather than the library's.
    const config = await oidc.discovery(new URL(`http://localhost:${server!.port}`), apiClient.id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const exchange = await fetch(config.serverMetadata().token_endpoint!, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${apiClient.id}:${apiClient.secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    expect({ status: exchange.status, body: await exchange.json() }).toEqual({
      status: 500,
      body: {
        error: 'server_error',
        error_description:
          'A secret kept by the service cannot be opened with its current SECRET_KEY; an administrator must restore the key it was sealed with',
      },
    });
    await server!.waitFor(
      (line) =>
        line.level === 50 &&
        line.msg ===
          `the secret of the OAuth client ${apiClient.id} does not open with SECRET_KEY: it was sealed under another key (SECRET_KEY changed) or altered`,
    );

    // So does the start of a sign-in with an identity provider whose client secret was sealed with the old key.
    const relogged = (await call('POST', '/api/auth/login/json', ADMIN)).body.data.access_token;
    const link = await call(
      'POST',
      '/api/auth/identities/github/link',
      { redirect_to: `http://localhost:${server!.port}/settings`, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' },
      relogged,
    );
    expect(link.status).toBe(500);
    expect(link.body.error.message).toBe(verified.body.error.message);
    await server!.waitFor(
      (line) => line.level === 50 && line.err?.message?.startsWith('the client secret of the identity provider github does not open'),
    );
    await stop();
  });
});
