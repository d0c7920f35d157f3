import { loadConfig } from '../src/config';
import { problemsOf } from './support/config';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({ SECRET_KEY: 'x'.repeat(32) });
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8000,
      dataDir: './data',
      algorithm: 'HS256',
      accessTokenExpireMinutes: 30,
      refreshTokenExpireDays: 7,
      refreshReuseGraceSeconds: 10,
      bcryptCost: 12,
      defaultPageSize: 20,
      maxPageSize: 100,
      docsEnabled: true,
      appVersion: '1.0.0',
      databaseUrl: undefined,
      databasePreparedStatements: true,
      jwtIssuer: 'http://127.0.0.1:8000',
      jwtAudience: 'account-service',
      sessionMaxDays: 30,
      requireVerifiedEmail: false,
      mailLogLinks: true,
      smtpRequireTls: false,
      metricsEnabled: true,
      metricsPublic: false,
      headersTimeoutMs: 20_000,
      requestTimeoutMs: 60_000,
      maxConnections: 10_000,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('refuses to start in production without a secret key, and with a short one anywhere', () => {
    expect(problemsOf({ NODE_ENV: 'production', SMTP_URL: 'smtps://mail.example.com' })).toEqual([expect.stringContaining('SECRET_KEY is required')]);
    expect(problemsOf({ SECRET_KEY: 'short' })).toEqual(['SECRET_KEY must be at least 32 bytes with HS256, got 5']);
  });

  it('asks SECRET_KEY for as many bytes as the HMAC algorithm\'s hash: 32 for HS256, 48 for HS384, 64 for HS512', () => {
    for (const [algorithm, bytes] of [['HS256', 32], ['HS384', 48], ['HS512', 64]] as const) {
      expect(problemsOf({ ALGORITHM: algorithm, SECRET_KEY: 'x'.repeat(bytes - 1) })).toEqual([`SECRET_KEY must be at least ${bytes} bytes with ${algorithm}, got ${bytes - 1}`]);
      expect(problemsOf({ ALGORITHM: algorithm, SECRET_KEY: 'x'.repeat(bytes) })).toEqual([]);
      expect(problemsOf({ NODE_ENV: 'production', SMTP_URL: 'smtps://mail.example.com', ALGORITHM: algorithm })).toEqual([`SECRET_KEY is required when NODE_ENV=production (at least ${bytes} bytes with ${algorithm})`]);
      // The key made in development is long enough for each.
      expect(Buffer.byteLength(loadConfig({ ALGORITHM: algorithm }).secretKey)).toBeGreaterThanOrEqual(bytes);
    }
    // Bytes, not characters: 31 two-byte characters are 62 bytes.
    expect(problemsOf({ ALGORITHM: 'HS512', SECRET_KEY: 'é'.repeat(31) })).toEqual(['SECRET_KEY must be at least 64 bytes with HS512, got 62']);
    expect(problemsOf({ ALGORITHM: 'HS512', SECRET_KEY: 'é'.repeat(32) })).toEqual([]);
  });

  it('reads the session and token settings, JWT_ISSUER following APP_URL unless set', () => {
    const config = loadConfig({ SECRET_KEY: 'x'.repeat(32), APP_URL: 'https://accounts.example.com/', SESSION_MAX_DAYS: '90', REQUIRE_VERIFIED_EMAIL: 'true' });
    expect(config).toMatchObject({ jwtIssuer: 'https://accounts.example.com', jwtAudience: 'account-service', sessionMaxDays: 90, requireVerifiedEmail: true });
    expect(loadConfig({ SECRET_KEY: 'x'.repeat(32), JWT_ISSUER: 'https://id.example.com', JWT_AUDIENCE: 'api' })).toMatchObject({ jwtIssuer: 'https://id.example.com', jwtAudience: 'api' });
    // A session cannot be shorter than the refresh token that keeps it going.
    expect(problemsOf({ SECRET_KEY: 'x'.repeat(32), SESSION_MAX_DAYS: '5' })).toEqual(['SESSION_MAX_DAYS (5) must not be less than REFRESH_TOKEN_EXPIRE_DAYS (7)']);
    expect(problemsOf({ SECRET_KEY: 'x'.repeat(32), SESSION_MAX_DAYS: '0' })).toEqual(['SESSION_MAX_DAYS must be between 1 and 3650, got 0']);
  });

  it('makes a random key in development and says so', () => {
    const a = loadConfig({});
    const b = loadConfig({});
    expect(a.secretKeyGenerated).toBe(true);
    expect(a.secretKey.length).toBeGreaterThanOrEqual(32);
    expect(a.secretKey).not.toBe(b.secretKey);
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
    const config = loadConfig({ SECRET_KEY: 'x'.repeat(32), DOCS_ENABLED: 'false', PORT: '9000', BCRYPT_COST: '4', DATABASE_PREPARED_STATEMENTS: 'false' });
    expect(config.docsEnabled).toBe(false);
    expect(config.databasePreparedStatements).toBe(false);
    expect(config.port).toBe(9000);
    expect(config.bcryptCost).toBe(4);
  });
});
