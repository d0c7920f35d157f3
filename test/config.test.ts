import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { problemsOf } from './support/config.js';
import { readPage, ROOT } from './support/markdown.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({ SECRET_KEY: 'x'.repeat(32) });
    expect(config).toMatchObject({
      server: {
        host: '127.0.0.1',
        port: 8000,
        appVersion: '1.0.0',
        headersTimeoutMs: 20_000,
        requestTimeoutMs: 60_000,
        maxConnections: 10_000,
      },
      database: { url: undefined, preparedStatements: true, dataDir: './data' },
      account: { appUrl: 'http://localhost:8000' },
      tokens: {
        algorithm: 'HS256',
        accessTokenExpireMinutes: 30,
        refreshTokenExpireDays: 7,
        issuer: 'http://localhost:8000',
        audience: 'account-service',
      },
      sessions: { maxDays: 30, refreshReuseGraceSeconds: 10, requireVerifiedEmail: false },
      passwords: { bcryptCost: 12 },
      pagination: { defaultPageSize: 20, maxPageSize: 100 },
      docs: { enabled: true },
      console: { enabled: true },
      mail: { logLinks: true, smtpRequireTls: false },
      metrics: { enabled: true, public: false },
      admin: undefined,
    });
    // Frozen all the way down: no part can be changed after start-up.
    expect(Object.isFrozen(config)).toBe(true);
    for (const part of Object.values(config)) if (part !== undefined) expect(Object.isFrozen(part)).toBe(true);
    expect(Object.isFrozen(config.server.corsOrigins)).toBe(true);
  });

  it('refuses to start in production without a secret key, and with a short one anywhere', () => {
    expect(problemsOf({ NODE_ENV: 'production', SMTP_URL: 'smtps://mail.example.com' })).toEqual([
      expect.stringContaining('SECRET_KEY is required'),
    ]);
    expect(problemsOf({ SECRET_KEY: 'short' })).toEqual(['SECRET_KEY must be at least 32 bytes with HS256, got 5']);
  });

  it("asks SECRET_KEY for as many bytes as the HMAC algorithm's hash: 32 for HS256, 48 for HS384, 64 for HS512", () => {
    for (const [algorithm, bytes] of [
      ['HS256', 32],
      ['HS384', 48],
      ['HS512', 64],
    ] as const) {
      expect(problemsOf({ ALGORITHM: algorithm, SECRET_KEY: 'x'.repeat(bytes - 1) })).toEqual([
        `SECRET_KEY must be at least ${bytes} bytes with ${algorithm}, got ${bytes - 1}`,
      ]);
      expect(problemsOf({ ALGORITHM: algorithm, SECRET_KEY: 'x'.repeat(bytes) })).toEqual([]);
      expect(problemsOf({ NODE_ENV: 'production', SMTP_URL: 'smtps://mail.example.com', ALGORITHM: algorithm })).toEqual([
        `SECRET_KEY is required when NODE_ENV=production (at least ${bytes} bytes with ${algorithm})`,
      ]);
      // The key made in development is long enough for each.
      expect(Buffer.byteLength(loadConfig({ ALGORITHM: algorithm }).secret.key)).toBeGreaterThanOrEqual(bytes);
    }
    // Bytes, not characters: 31 two-byte characters are 62 bytes.
    expect(problemsOf({ ALGORITHM: 'HS512', SECRET_KEY: 'é'.repeat(31) })).toEqual([
      'SECRET_KEY must be at least 64 bytes with HS512, got 62',
    ]);
    expect(problemsOf({ ALGORITHM: 'HS512', SECRET_KEY: 'é'.repeat(32) })).toEqual([]);
  });

  it('reads the session and token settings, JWT_ISSUER following APP_URL unless set', () => {
    const config = loadConfig({
      SECRET_KEY: 'x'.repeat(32),
      APP_URL: 'https://accounts.example.com/',
      SESSION_MAX_DAYS: '90',
      REQUIRE_VERIFIED_EMAIL: 'true',
    });
    expect(config).toMatchObject({
      tokens: { issuer: 'https://accounts.example.com', audience: 'account-service' },
      sessions: { maxDays: 90, requireVerifiedEmail: true },
    });
    expect(loadConfig({ SECRET_KEY: 'x'.repeat(32), JWT_ISSUER: 'https://id.example.com', JWT_AUDIENCE: 'api' }).tokens).toMatchObject({
      issuer: 'https://id.example.com',
      audience: 'api',
    });
    // A session cannot be shorter than the refresh token that keeps it going.
    expect(problemsOf({ SECRET_KEY: 'x'.repeat(32), SESSION_MAX_DAYS: '5' })).toEqual([
      'SESSION_MAX_DAYS (5) must not be less than REFRESH_TOKEN_EXPIRE_DAYS (7)',
    ]);
    expect(problemsOf({ SECRET_KEY: 'x'.repeat(32), SESSION_MAX_DAYS: '0' })).toEqual([
      'SESSION_MAX_DAYS must be between 1 and 3650, got 0',
    ]);
  });

  it('makes a random key in development when given nowhere to keep one', () => {
    const a = loadConfig({});
    const b = loadConfig({});
    expect(a.secret.source).toBe('random');
    expect(a.secret.key.length).toBeGreaterThanOrEqual(32);
    expect(a.secret.key).not.toBe(b.secret.key);
  });

  it('reports every bad value at once, by name', () => {
    const problems = problemsOf({
      SECRET_KEY: 'x'.repeat(40),
      PORT: 'eighty',
      BCRYPT_COST: '3',
      DOCS_ENABLED: 'maybe',
      ALGORITHM: 'none',
      DEFAULT_PAGE_SIZE: '50',
      MAX_PAGE_SIZE: '10',
      DATABASE_URL: 'mysql://x',
      ADMIN_EMAIL: 'admin@example.com',
    });
    expect(problems.join('\n')).toEqual(expect.stringContaining('PORT must be a whole number'));
    for (const name of ['BCRYPT_COST', 'DOCS_ENABLED', 'ALGORITHM', 'DEFAULT_PAGE_SIZE', 'DATABASE_URL', 'ADMIN_PASSWORD']) {
      expect(problems.some((p) => p.includes(name))).toBe(true);
    }
  });

  it('parses booleans and numbers from their usual spellings', () => {
    const config = loadConfig({
      SECRET_KEY: 'x'.repeat(32),
      DOCS_ENABLED: 'false',
      PORT: '9000',
      BCRYPT_COST: '4',
      DATABASE_PREPARED_STATEMENTS: 'false',
    });
    expect(config.docs.enabled).toBe(false);
    expect(config.database.preparedStatements).toBe(false);
    expect(config.server.port).toBe(9000);
    expect(config.passwords.bcryptCost).toBe(4);
  });
});

/**
 * Every variable the loader reads, found in its sources: the first argument of each EnvReader call
 * (`read.string('PORT')`, `read.oneOf('ALGORITHM', …)`…) and each name read from the environment
 * directly (`env.UV_THREADPOOL_SIZE`).
 */
function variablesTheLoaderReads(): Set<string> {
  const names = new Set<string>();
  const folder = join(ROOT, 'src', 'config');
  for (const file of readdirSync(folder).filter((name) => name.endsWith('.ts'))) {
    const text = readFileSync(join(folder, file), 'utf8');
    for (const [, name] of text.matchAll(/\bread\.[A-Za-z]+\(\s*'([A-Z][A-Z0-9_]*)'/g)) names.add(name);
    for (const [, dotted, quoted] of text.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)\b|\[\s*'([A-Z][A-Z0-9_]*)'\s*\])/g)) {
      names.add(dotted ?? quoted);
    }
  }
  return names;
}

/** The variables docs/configuration.md gives a row of its table (a row may name several). */
function documentedVariables(): Set<string> {
  const names = new Set<string>();
  for (const line of readPage('docs/configuration.md').split('\n')) {
    const first = /^\| ((?:`[A-Z][A-Z0-9_]*`(?:, )?)+) \|/.exec(line)?.[1];
    for (const [, name] of first?.matchAll(/`([A-Z][A-Z0-9_]*)`/g) ?? []) names.add(name);
  }
  return names;
}

describe('the configuration page', () => {
  it('finds every variable the loader reads in its sources', () => {
    // Each name the loader looks up in an environment that records them, in development and in
    // production, must be one the scan of its sources found: a read the scan cannot see fails here.
    const found = variablesTheLoaderReads();
    const looked = new Set<string>();
    const recording = (env: Record<string, string>) =>
      new Proxy(env, {
        get: (target, name) => {
          if (typeof name === 'string') looked.add(name);
          return target[name as string];
        },
      });
    loadConfig(recording({}));
    loadConfig(recording({ NODE_ENV: 'production', SECRET_KEY: 'x'.repeat(32), SMTP_URL: 'smtps://mail.example.com' }));
    expect([...looked].filter((name) => !found.has(name))).toEqual([]);
    expect(found.size).toBeGreaterThan(90);
  });

  it('documents every variable the loader reads, and none it does not', () => {
    const read = variablesTheLoaderReads();
    const documented = documentedVariables();
    expect({ undocumented: [...read].filter((name) => !documented.has(name)).sort() }).toEqual({ undocumented: [] });
    expect({ notRead: [...documented].filter((name) => !read.has(name)).sort() }).toEqual({ notRead: [] });
  });
});
