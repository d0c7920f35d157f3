import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Kysely } from 'kysely';
import { Client } from 'pg';
import request from 'supertest';
import { createApp, type App } from '../../src/app.js';
import { createAccountClient, type AccountClient, type TokenSource } from '../../src/client.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import type { Database } from '../../src/db/types.js';
import { createLogger } from '../../src/logger.js';
import { assertMatchesContract } from './contract.js';
import { copyOfCluster } from './pglite-template.js';
import { createPostgresDatabase } from './postgres-template.js';

export const TEST_SECRET = 'test-secret-key-that-is-long-enough-for-hs256';
export const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };

export interface Response {
  status: number;
  headers: Record<string, string>;
  body: any;
}

export interface Options {
  token?: string;
  headers?: Record<string, string>;
  /** Send the body as application/x-www-form-urlencoded. */
  form?: boolean;
  /** Send this string as the raw body, with the content type in `headers`. */
  raw?: string;
}

export interface TestContext {
  app: App;
  config: Config;
  db: Kysely<Database>;
  kind: 'embedded' | 'postgres';
  database: SuiteDatabase;
  /** Where the app listens, `http://127.0.0.1:PORT`, for clients that speak real HTTP. */
  baseUrl: string;
  get(path: string, options?: Options): Promise<Response>;
  post(path: string, body?: unknown, options?: Options): Promise<Response>;
  put(path: string, body?: unknown, options?: Options): Promise<Response>;
  delete(path: string, options?: Options): Promise<Response>;
  send(method: string, path: string, body?: unknown, options?: Options): Promise<Response>;
  /** The typed client, without a token, on this app's port; every answer is checked against the contract. */
  client: AccountClient;
  /** The typed client sending this access token. */
  clientFor(token: TokenSource): AccountClient;
  /** Registers a user and returns its tokens and record. */
  register(overrides?: Partial<{ email: string; password: string; name: string }>): Promise<RegisteredUser>;
  /** Logs in as the configured admin. */
  adminToken(): Promise<string>;
  /** Stops the app but keeps its database, for another app to open (a restart). */
  stop(): Promise<void>;
  /** Stops the app and drops its database. */
  close(): Promise<void>;
}

export interface RegisteredUser {
  id: number;
  email: string;
  password: string;
  name: string;
  access: string;
  refresh: string;
}

let counter = 0;
export const uniqueEmail = (prefix = 'user') =>
  `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}-${randomBytes(3).toString('hex')}@example.com`;

export interface SuiteDatabase {
  env: Record<string, string>;
  drop: () => Promise<void>;
  kind: 'embedded' | 'postgres';
}

export interface StartOptions {
  /** Run on the database of another app (a restart, or a second process); the owner drops it. */
  sameDatabaseAs?: TestContext;
  /** The clock the app reads TOTP codes and second-factor challenges against (milliseconds). */
  clock?: () => number;
  /** The port to listen on (say it in APP_URL too, for an issuer that must be the app's own address); any free one otherwise. */
  port?: number;
}

/**
 * The database a suite runs on: a fresh PGlite in a folder of its own, or a fresh PostgreSQL database.
 * Either comes migrated unless `empty`.
 */
export async function suiteDatabase({ empty = false } = {}): Promise<SuiteDatabase> {
  if (process.env.TEST_DATABASE_KIND !== 'postgres') {
    // A folder of its own either way: copying a made cluster is much quicker than creating one in memory.
    const { dir, drop } = await copyOfCluster({ empty });
    return { env: { DATA_DIR: dir }, drop, kind: 'embedded' };
  }
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) throw new Error('TEST_DATABASE_URL is required for the postgres project');
  const name = `account_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const url = await createPostgresDatabase(serverUrl, name, { empty });
  return {
    env: { DATABASE_URL: url },
    kind: 'postgres',
    drop: async () => {
      const client = new Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** One app per suite, on its own database, with bcrypt at cost 4 and a known secret. */
export async function startTestApp(env: Record<string, string> = {}, options: StartOptions = {}): Promise<TestContext> {
  const shared = options.sameDatabaseAs?.database;
  const database: SuiteDatabase = shared ? { ...shared, drop: async () => {} } : await suiteDatabase();
  const config = loadConfig({
    SECRET_KEY: TEST_SECRET,
    BCRYPT_COST: '4',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    LOG_LEVEL: 'silent',
    // Suites make many requests from one address; the rate-limit suite turns limits on.
    RATE_LIMIT_ENABLED: 'false',
    // Suites fire bursts of parallel requests; the hashing-queue suite sets its own bound.
    PASSWORD_HASH_QUEUE_MAX: '10000',
    PASSWORD_HASH_CALLER_MAX: '10000',
    ...database.env,
    ...env,
  });
  // Each operation's request validator is compiled when a test first calls it: a suite's app serves a
  // few operations, and compiling all of them at every start was a tenth of the suite's CPU time.
  const app = await createApp(config, { logger: createLogger({ level: 'silent' }), clock: options.clock, compileValidatorsAhead: false });
  // Both clients speak real HTTP to the app on a local port: the typed client through the global
  // fetch, `send` through supertest (given the URL, rather than the app, so that it does not start and
  // stop a server of its own for every request).
  const listener = app.koa.listen(options.port ?? 0, '127.0.0.1');
  await once(listener, 'listening');
  const baseUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  const clientFor = (token?: TokenSource) => createAccountClient({ baseUrl, token, fetch: fetchCheckedAgainstContract });
  const client = clientFor();

  const send = async (method: string, path: string, body?: unknown, options: Options = {}): Promise<Response> => {
    let req = request(baseUrl)[method.toLowerCase() as 'get'](path);
    if (options.token) req = req.set('Authorization', `Bearer ${options.token}`);
    for (const [name, value] of Object.entries(options.headers ?? {})) req = req.set(name, value);
    if (options.raw !== undefined) req = req.send(options.raw);
    else if (body !== undefined) req = options.form ? req.type('form').send(body as Record<string, string>) : req.send(body as object);
    const res = await req;
    const response = { status: res.status, headers: res.headers as Record<string, string>, body: res.body };
    assertMatchesContract(method, path, res.status, res.headers, res.status === 204 ? undefined : res.body);
    return response;
  };

  const shutDown = async () => {
    const closed = once(listener, 'close');
    listener.close();
    listener.closeAllConnections();
    await closed;
    await app.close();
  };

  let stopped = false;
  const ctx: TestContext = {
    app,
    config,
    db: app.db,
    kind: database.kind,
    database,
    baseUrl,
    send,
    get: (path, options) => send('GET', path, undefined, options),
    post: (path, body, options) => send('POST', path, body, options),
    put: (path, body, options) => send('PUT', path, body, options),
    delete: (path, options) => send('DELETE', path, undefined, options),
    client,
    clientFor,
    async register(overrides = {}) {
      const input = { email: uniqueEmail(), password: 'password-123', name: 'Test User', ...overrides };
      const { data, error, response } = await client.POST('/api/auth/register', { body: input });
      if (!data) throw new Error(`register failed: ${response.status} ${JSON.stringify(error)}`);
      const { user, access_token: access, refresh_token: refresh } = data.data;
      if (access === undefined || refresh === undefined) throw new Error('register opened no session (REQUIRE_VERIFIED_EMAIL is on)');
      return { id: user.id, email: user.email, password: input.password, name: input.name, access, refresh };
    },
    async adminToken() {
      const { data, error, response } = await client.POST('/api/auth/login/json', { body: ADMIN });
      if (!data) throw new Error(`admin login failed: ${response.status} ${JSON.stringify(error)}`);
      return data.data.access_token;
    },
    async stop() {
      if (!stopped) await shutDown();
      stopped = true;
    },
    async close() {
      if (!stopped) await shutDown();
      stopped = true;
      await database.drop();
    },
  };
  return ctx;
}

/** The global fetch, with every answer checked against the contract as `send` checks its own. */
async function fetchCheckedAgainstContract(request: Request): Promise<globalThis.Response> {
  const response = await fetch(request);
  const url = new URL(request.url);
  const text = await response.clone().text();
  let body: unknown = text === '' ? undefined : text;
  if (String(response.headers.get('content-type')).startsWith('application/json')) body = JSON.parse(text);
  assertMatchesContract(request.method, url.pathname + url.search, response.status, Object.fromEntries(response.headers), body);
  return response;
}
