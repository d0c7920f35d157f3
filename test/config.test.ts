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
    expect(problemsOf({ SECRET_KEY: 'short' })).toEqual([expect.stringContaining('at least 32 characters')]);
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
