import { randomBytes, type KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { KeyError, parsePrivateKey, parsePublicKeys, type AsymmetricAlgorithm } from './services/keys';
import { HASH_ALGORITHMS, type HashAlgorithm, type HashPolicy } from './services/password-hashes';

export type Algorithm = 'HS256' | 'HS384' | 'HS512' | AsymmetricAlgorithm;
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export type LogFormat = 'json' | 'pretty';

export interface Config {
  readonly nodeEnv: string;
  readonly host: string;
  readonly port: number;
  /** PostgreSQL connection string; when absent the embedded database in `dataDir` is used. */
  readonly databaseUrl: string | undefined;
  /**
   * Whether the queries every request runs go to PostgreSQL as named statements, prepared once per
   * connection; off for a pooler that cannot keep them (PgBouncer in transaction mode before 1.21).
   */
  readonly databasePreparedStatements: boolean;
  readonly dataDir: string;
  readonly secretKey: string;
  /** True when no SECRET_KEY was configured and a random one was made for this process. */
  readonly secretKeyGenerated: boolean;
  readonly algorithm: Algorithm;
  /** The key RS256 and ES256 tokens are signed with (from JWT_PRIVATE_KEY); undefined with HS*. */
  readonly jwtPrivateKey: KeyObject | undefined;
  /** Public keys of retired signing keys: tokens they signed still verify, and the JWKS lists them. */
  readonly jwtPreviousPublicKeys: readonly KeyObject[];
  readonly accessTokenExpireMinutes: number;
  readonly refreshTokenExpireDays: number;
  readonly refreshReuseGraceSeconds: number;
  readonly bcryptCost: number;
  /** The algorithm of new password hashes; stored hashes of another are replaced at sign-in. */
  readonly passwordHashAlgorithm: HashAlgorithm;
  readonly argon2MemoryKib: number;
  readonly argon2Iterations: number;
  /** Body limit of POST /api/users/import alone, so that 1,000 rows fit. */
  readonly importMaxBodyBytes: number;
  /** Check new passwords against the Pwned Passwords range API, by k-anonymity. */
  readonly pwnedPasswordsCheck: boolean;
  /** The range API's base; the five-character prefix is appended. */
  readonly pwnedPasswordsUrl: string;
  /** Past this, a new password is let through unchecked (logged and counted). */
  readonly pwnedPasswordsTimeoutMs: number;
  /** Password hashes run at once; by default the cores, up to libuv's thread pool size. */
  readonly passwordHashConcurrency: number;
  /** Hashes that may wait for a slot before more are refused with 503. */
  readonly passwordHashQueueMax: number;
  readonly defaultPageSize: number;
  readonly maxPageSize: number;
  readonly docsEnabled: boolean;
  readonly appVersion: string;
  readonly adminEmail: string | undefined;
  readonly adminPassword: string | undefined;
  readonly logLevel: LogLevel;
  /** JSON lines, or pino-pretty's colored lines for a developer's terminal. */
  readonly logFormat: LogFormat;
  /** smtp:// or smtps:// URL; undefined writes messages to the log instead. */
  readonly smtpUrl: string | undefined;
  readonly mailFrom: string;
  /** Base of the links in e-mails, without a trailing slash. */
  readonly appUrl: string;
  readonly passwordResetExpireMinutes: number;
  readonly emailVerifyExpireHours: number;
  readonly mailPollIntervalMs: number;
  readonly mailRetryBaseMs: number;
  readonly mailMaxAttempts: number;
  readonly rateLimitEnabled: boolean;
  /** Per client IP, on the operations that take credentials or tokens. */
  readonly authRateLimitPerMinute: number;
  /** Per client IP, on every other API operation (health, docs and metrics are never limited). */
  readonly rateLimitPerMinute: number;
  readonly loginMaxFailures: number;
  readonly loginLockoutMinutes: number;
  /** Where the counters live: this process's memory, or the service's PostgreSQL database. */
  readonly rateLimitStore: 'memory' | 'postgres';
  /** Take the client IP from X-Forwarded-For (only behind a proxy that sets it). */
  readonly trustProxy: boolean;
  readonly maxBodyBytes: number;
  /** Origins allowed to call the API from a browser; empty means CORS is off. */
  readonly corsOrigins: readonly string[];
  /** Worker processes (node:cluster); 1 runs the service in this process. */
  readonly webConcurrency: number;
  /** How long a stopping process waits for requests in flight before closing their connections. */
  readonly shutdownTimeoutSeconds: number;
  /** Serve Prometheus metrics at /metrics. */
  readonly metricsEnabled: boolean;
  /** When set, /metrics requires `Authorization: Bearer <metricsToken>`. */
  readonly metricsToken: string | undefined;
  /** Audit events older than this many days are purged; undefined keeps them forever. */
  readonly auditRetentionDays: number | undefined;
  /** Seconds between purges of spent sessions, tokens and mail; 0 turns the worker off. */
  readonly housekeepingIntervalSeconds: number;
  /** Rows deleted per statement, so that no purge holds many locks or runs long. */
  readonly housekeepingBatchSize: number;
  /** How long a revoked or expired session, a spent token or finished mail is kept before it is purged. */
  readonly housekeepingRetentionHours: number;

  // Sessions and the tokens other services trust.
  /** `iss` of every token issued, and the only issuer accepted; by default APP_URL. */
  readonly jwtIssuer: string;
  /** `aud` of every token issued, and the only audience accepted. */
  readonly jwtAudience: string;
  /** A session ends this many days after it was opened, however often it is refreshed. */
  readonly sessionMaxDays: number;
  /** Sign-in (logins and refresh) waits until the account's e-mail address is verified. */
  readonly requireVerifiedEmail: boolean;
  // Nobody locks out anyone else.
  /** Failed sign-ins per account and hour, from any clients, that lock the account for everyone. */
  readonly loginAccountMaxFailures: number;
  /** Places in the password-hash queue (running or waiting) one caller may hold at once. */
  readonly passwordHashCallerMax: number;
  /** Least time between two reset mails to one account. */
  readonly passwordResetMailIntervalSeconds: number;
  /** Reset mails one account may be sent per hour. */
  readonly passwordResetMailsPerHour: number;
  // Production defaults that cannot leak.
  /** Without SMTP_URL, whether the log line that takes the place of a message carries its link. */
  readonly mailLogLinks: boolean;
  /** STARTTLS is required of an smtp:// server (production, unless SMTP_URL says `ignoreTLS=true`). */
  readonly smtpRequireTls: boolean;
  /** /metrics without a token on purpose (METRICS_PUBLIC=true). */
  readonly metricsPublic: boolean;
  /** True when production turned /metrics off because it would have been public; said at start. */
  readonly metricsWithheld: boolean;
  /** How long a client may take to send a request's headers, and the whole request. */
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  /** Open connections per process; more are closed as soon as they are accepted. */
  readonly maxConnections: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

const ALGORITHMS: readonly Algorithm[] = ['HS256', 'HS384', 'HS512', 'RS256', 'ES256'];
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];
const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];
/**
 * The shortest SECRET_KEY, in bytes, per algorithm: an HMAC key as long as the hash's output
 * (RFC 7518 §3.2). With RS256 and ES256 the secret only seals queued mail.
 */
const MIN_SECRET_BYTES: Record<Algorithm, number> = { HS256: 32, HS384: 48, HS512: 64, RS256: 32, ES256: 32 };

/**
 * Parses the environment into a frozen Config. Every problem is collected and reported at once,
 * so a misconfigured deployment is fixed in one round. `stdoutIsTty` picks the default log format.
 */
export function loadConfig(env: Env = process.env, stdoutIsTty = Boolean(process.stdout.isTTY)): Config {
  const problems: string[] = [];
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };

  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (!/^-?\d+$/.test(raw)) {
      problems.push(`${name} must be a whole number, got "${raw}"`);
      return fallback;
    }
    const value = Number(raw);
    if (value < min || value > max) {
      problems.push(`${name} must be between ${min} and ${max}, got ${value}`);
      return fallback;
    }
    return value;
  };

  const boolean = (name: string, fallback: boolean): boolean => {
    const raw = read(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(raw)) return true;
    if (['false', '0', 'no', 'off'].includes(raw)) return false;
    problems.push(`${name} must be true or false, got "${raw}"`);
    return fallback;
  };

  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T, normalize = (s: string) => s): T => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    const value = normalize(raw) as T;
    if (!allowed.includes(value)) {
      problems.push(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
      return fallback;
    }
    return value;
  };

  const nodeEnv = read('NODE_ENV') ?? 'development';
  const production = nodeEnv === 'production';

  const maxPageSize = integer('MAX_PAGE_SIZE', 100, 1, 1000);
  const defaultPageSize = integer('DEFAULT_PAGE_SIZE', 20, 1, 1000);
  if (defaultPageSize > maxPageSize) {
    problems.push(`DEFAULT_PAGE_SIZE (${defaultPageSize}) must not exceed MAX_PAGE_SIZE (${maxPageSize})`);
  }

  const databaseUrl = read('DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }

  const adminEmail = read('ADMIN_EMAIL');
  const adminPassword = env.ADMIN_PASSWORD || undefined;
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    problems.push('ADMIN_EMAIL and ADMIN_PASSWORD go together: set both or neither');
  }
  if (adminEmail !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(adminEmail)) {
    problems.push(`ADMIN_EMAIL must be an e-mail address, got "${adminEmail}"`);
  }
  if (adminPassword !== undefined && (adminPassword.length < 8 || Buffer.byteLength(adminPassword, 'utf8') > 72)) {
    problems.push('ADMIN_PASSWORD must be at least 8 characters and at most 72 bytes');
  }

  const smtpUrl = read('SMTP_URL');
  if (smtpUrl !== undefined && !/^smtps?:\/\/[^/]/.test(smtpUrl)) {
    problems.push('SMTP_URL must be an smtp:// or smtps:// URL');
  }
  const host = read('HOST') ?? '127.0.0.1';
  const port = integer('PORT', 8000, 0, 65535);
  const appUrl = (read('APP_URL') ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(appUrl)) problems.push(`APP_URL must be an http:// or https:// URL, got "${appUrl}"`);

  const rateLimitStore = oneOf('RATE_LIMIT_STORE', ['memory', 'postgres'] as const, 'memory', (s) => s.toLowerCase());
  if (rateLimitStore === 'postgres' && databaseUrl === undefined) {
    problems.push('RATE_LIMIT_STORE=postgres needs DATABASE_URL (the embedded database serves one process only)');
  }
  const corsOrigins = (read('CORS_ORIGINS') ?? '')
    .split(',')
    .map((origin) => origin.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  for (const origin of corsOrigins) {
    if (origin !== '*' && !/^https?:\/\/[^/]+$/.test(origin)) problems.push(`CORS_ORIGINS: "${origin}" is not an origin like https://app.example.com`);
  }

  const algorithm = oneOf('ALGORITHM', ALGORITHMS, 'HS256', (s) => s.toUpperCase());
  const minSecretBytes = MIN_SECRET_BYTES[algorithm];
  let secretKey = read('SECRET_KEY');
  let secretKeyGenerated = false;
  if (secretKey !== undefined && Buffer.byteLength(secretKey, 'utf8') < minSecretBytes) {
    problems.push(`SECRET_KEY must be at least ${minSecretBytes} bytes with ${algorithm}, got ${Buffer.byteLength(secretKey, 'utf8')}`);
  } else if (secretKey === undefined) {
    if (production) {
      problems.push(`SECRET_KEY is required when NODE_ENV=production (at least ${minSecretBytes} bytes with ${algorithm})`);
    } else {
      secretKey = randomBytes(64).toString('base64url');
      secretKeyGenerated = true;
    }
  }
  const { jwtPrivateKey, jwtPreviousPublicKeys } = signingKeys(algorithm, read('JWT_PRIVATE_KEY'), read('JWT_PREVIOUS_PUBLIC_KEYS'), problems);

  const pwnedPasswordsUrl = read('PWNED_PASSWORDS_URL') ?? 'https://api.pwnedpasswords.com/range/';
  if (!/^https?:\/\/[^/]/.test(pwnedPasswordsUrl)) problems.push(`PWNED_PASSWORDS_URL must be an http:// or https:// URL, got "${pwnedPasswordsUrl}"`);

  const webConcurrencyRaw = read('WEB_CONCURRENCY')?.toLowerCase();
  const webConcurrency = webConcurrencyRaw === 'auto' ? availableParallelism() : integer('WEB_CONCURRENCY', 1, 1, 256);
  if (webConcurrency > 1 && databaseUrl === undefined) {
    problems.push('WEB_CONCURRENCY above 1 needs DATABASE_URL (the embedded database serves one process only)');
  }

  // Sessions and the tokens other services trust.
  const refreshTokenExpireDays = integer('REFRESH_TOKEN_EXPIRE_DAYS', 7, 1, 365);
  const sessionMaxDays = integer('SESSION_MAX_DAYS', 30, 1, 3650);
  if (sessionMaxDays < refreshTokenExpireDays) {
    problems.push(`SESSION_MAX_DAYS (${sessionMaxDays}) must not be less than REFRESH_TOKEN_EXPIRE_DAYS (${refreshTokenExpireDays})`);
  }
  const jwtIssuer = read('JWT_ISSUER') ?? appUrl;
  const jwtAudience = read('JWT_AUDIENCE') ?? 'account-service';
  const mailLogLinks = boolean('MAIL_LOG_LINKS', !production);
  if (production && smtpUrl === undefined && !mailLogLinks) {
    problems.push(
      'SMTP_URL is required when NODE_ENV=production: without it every e-mail, reset and verification links included, ' +
        'would be written to the log; set MAIL_LOG_LINKS=true if that is really wanted',
    );
  }
  const smtpRequireTls = production && smtpUrl !== undefined && requiresStartTls(smtpUrl, problems);
  const metricsToken = read('METRICS_TOKEN');
  const metricsPublic = boolean('METRICS_PUBLIC', false);
  const metricsEnabled = boolean('METRICS_ENABLED', true);
  // A public scrape tells anyone the traffic, the error rates and the sign-in failures: in production it is opt-in.
  const metricsWithheld = production && metricsEnabled && metricsToken === undefined && !metricsPublic;
  const headersTimeoutMs = integer('HEADERS_TIMEOUT_MS', 20_000, 100, 3_600_000);
  const requestTimeoutMs = integer('REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    problems.push(`HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }

  const config: Config = {
    nodeEnv,
    host,
    port,
    databaseUrl,
    databasePreparedStatements: boolean('DATABASE_PREPARED_STATEMENTS', true),
    dataDir: read('DATA_DIR') ?? './data',
    secretKey: secretKey ?? '',
    secretKeyGenerated,
    algorithm,
    jwtPrivateKey,
    jwtPreviousPublicKeys,
    accessTokenExpireMinutes: integer('ACCESS_TOKEN_EXPIRE_MINUTES', 30, 1, 24 * 60),
    refreshTokenExpireDays,
    refreshReuseGraceSeconds: integer('REFRESH_REUSE_GRACE_SECONDS', 10, 0, 3600),
    bcryptCost: integer('BCRYPT_COST', 12, 4, 31),
    passwordHashAlgorithm: oneOf('PASSWORD_HASH_ALGORITHM', HASH_ALGORITHMS, 'bcrypt', (s) => s.toLowerCase()),
    // OWASP's least argon2id setting: 19 MiB, two passes, one lane.
    argon2MemoryKib: integer('ARGON2_MEMORY_KIB', 19_456, 1024, 4 * 1024 * 1024),
    argon2Iterations: integer('ARGON2_ITERATIONS', 2, 1, 100),
    importMaxBodyBytes: integer('IMPORT_MAX_BODY_BYTES', 2 * 1024 * 1024, 1024, 50 * 1024 * 1024),
    pwnedPasswordsCheck: boolean('PWNED_PASSWORDS_CHECK', false),
    pwnedPasswordsUrl,
    pwnedPasswordsTimeoutMs: integer('PWNED_PASSWORDS_TIMEOUT_MS', 1500, 50, 60_000),
    passwordHashConcurrency: integer('PASSWORD_HASH_CONCURRENCY', defaultHashConcurrency(env), 1, 1024),
    passwordHashQueueMax: integer('PASSWORD_HASH_QUEUE_MAX', 16, 0, 100_000),
    defaultPageSize,
    maxPageSize,
    docsEnabled: boolean('DOCS_ENABLED', true),
    appVersion: read('APP_VERSION') ?? '1.0.0',
    adminEmail,
    adminPassword,
    logLevel: oneOf('LOG_LEVEL', LOG_LEVELS, production ? 'info' : 'debug', (s) => s.toLowerCase()),
    // Pretty only for a person at a terminal; anything that collects the output gets JSON.
    logFormat: oneOf('LOG_FORMAT', LOG_FORMATS, nodeEnv === 'development' && stdoutIsTty ? 'pretty' : 'json', (s) => s.toLowerCase()),
    smtpUrl,
    mailFrom: read('MAIL_FROM') ?? 'Account Service <no-reply@localhost>',
    appUrl,
    passwordResetExpireMinutes: integer('PASSWORD_RESET_EXPIRE_MINUTES', 30, 1, 24 * 60),
    emailVerifyExpireHours: integer('EMAIL_VERIFY_EXPIRE_HOURS', 24, 1, 24 * 30),
    mailPollIntervalMs: integer('MAIL_POLL_INTERVAL_MS', 2000, 50, 3_600_000),
    mailRetryBaseMs: integer('MAIL_RETRY_BASE_MS', 5000, 10, 3_600_000),
    mailMaxAttempts: integer('MAIL_MAX_ATTEMPTS', 10, 1, 100),
    rateLimitEnabled: boolean('RATE_LIMIT_ENABLED', true),
    authRateLimitPerMinute: integer('AUTH_RATE_LIMIT_PER_MINUTE', 20, 1, 1_000_000),
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', 600, 1, 10_000_000),
    loginMaxFailures: integer('LOGIN_MAX_FAILURES', 5, 1, 1000),
    loginLockoutMinutes: integer('LOGIN_LOCKOUT_MINUTES', 15, 1, 24 * 60),
    rateLimitStore,
    trustProxy: boolean('TRUST_PROXY', false),
    maxBodyBytes: integer('MAX_BODY_BYTES', 64 * 1024, 1024, 50 * 1024 * 1024),
    corsOrigins,
    webConcurrency,
    shutdownTimeoutSeconds: integer('SHUTDOWN_TIMEOUT_SECONDS', 10, 0, 3600),
    metricsEnabled: metricsEnabled && !metricsWithheld,
    metricsToken,
    auditRetentionDays: read('AUDIT_RETENTION_DAYS') === undefined ? undefined : integer('AUDIT_RETENTION_DAYS', 0, 1, 100 * 365),
    housekeepingIntervalSeconds: integer('HOUSEKEEPING_INTERVAL_SECONDS', 3600, 0, 7 * 24 * 3600),
    housekeepingBatchSize: integer('HOUSEKEEPING_BATCH_SIZE', 1000, 1, 100_000),
    // Rows stay a while after they stop mattering, for whoever looks into a recent sign-out or failed delivery.
    housekeepingRetentionHours: integer('HOUSEKEEPING_RETENTION_HOURS', 24, 1, 24 * 365),
    jwtIssuer,
    jwtAudience,
    sessionMaxDays,
    requireVerifiedEmail: boolean('REQUIRE_VERIFIED_EMAIL', false),

    loginAccountMaxFailures: integer('LOGIN_ACCOUNT_MAX_FAILURES', 100, 1, 1_000_000),
    passwordHashCallerMax: integer('PASSWORD_HASH_CALLER_MAX', 2, 1, 100_000),
    passwordResetMailIntervalSeconds: integer('PASSWORD_RESET_MAIL_INTERVAL_SECONDS', 60, 0, 24 * 3600),
    passwordResetMailsPerHour: integer('PASSWORD_RESET_MAILS_PER_HOUR', 5, 1, 1000),
    mailLogLinks,
    smtpRequireTls,
    metricsPublic,
    metricsWithheld,
    headersTimeoutMs,
    requestTimeoutMs,
    maxConnections: integer('MAX_CONNECTIONS', 10_000, 1, 1_000_000),
  };

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/**
 * Whether an SMTP_URL must upgrade with STARTTLS: smtp:// does unless its query says `ignoreTLS=true`
 * (a relay without TLS on the same host or network); smtps:// is TLS from the start. A URL that only
 * says `requireTLS=false` would send in clear to anyone who strips STARTTLS from the greeting, so in
 * production it is refused rather than read as a quiet opt-out.
 */
function requiresStartTls(smtpUrl: string, problems: string[]): boolean {
  let url: URL;
  try {
    url = new URL(smtpUrl);
  } catch {
    return false; // already reported as not an smtp:// URL
  }
  if (url.protocol !== 'smtp:') return false;
  if (url.searchParams.get('ignoreTLS') === 'true') return false;
  if (url.searchParams.get('requireTLS') === 'false') {
    problems.push('SMTP_URL says requireTLS=false: in production say ignoreTLS=true for a relay without TLS, or leave STARTTLS required');
  }
  return true;
}

/** How new password hashes are made, as the hashing pool takes it. */
export function hashPolicyOf(config: Config): HashPolicy {
  return {
    algorithm: config.passwordHashAlgorithm,
    bcryptCost: config.bcryptCost,
    argon2MemoryKib: config.argon2MemoryKib,
    argon2Iterations: config.argon2Iterations,
  };
}

/** One hash per core, but no more than libuv's thread pool (UV_THREADPOOL_SIZE, 4 by default) runs at once. */
function defaultHashConcurrency(env: Env): number {
  const pool = Number(env.UV_THREADPOOL_SIZE) || 4;
  return Math.max(1, Math.min(availableParallelism(), pool));
}

/**
 * RS256 and ES256 sign with JWT_PRIVATE_KEY and also verify with JWT_PREVIOUS_PUBLIC_KEYS; HS*
 * signs with SECRET_KEY, and keys set for it are refused rather than silently unused.
 */
function signingKeys(
  algorithm: Algorithm,
  privatePem: string | undefined,
  previousPems: string | undefined,
  problems: string[],
): { jwtPrivateKey: KeyObject | undefined; jwtPreviousPublicKeys: readonly KeyObject[] } {
  if (algorithm !== 'RS256' && algorithm !== 'ES256') {
    if (privatePem !== undefined) problems.push(`JWT_PRIVATE_KEY is set but ALGORITHM is ${algorithm}; set ALGORITHM=RS256 or ES256 to sign with it`);
    if (previousPems !== undefined) problems.push(`JWT_PREVIOUS_PUBLIC_KEYS is set but ALGORITHM is ${algorithm}; it applies to RS256 and ES256 only`);
    return { jwtPrivateKey: undefined, jwtPreviousPublicKeys: Object.freeze([]) };
  }
  const parse = <T>(name: string, build: () => T): T | undefined => {
    try {
      return build();
    } catch (error) {
      if (!(error instanceof KeyError)) throw error;
      problems.push(`${name} ${error.message}`);
      return undefined;
    }
  };
  if (privatePem === undefined) problems.push(`JWT_PRIVATE_KEY is required when ALGORITHM is ${algorithm} (a PEM private key)`);
  const jwtPrivateKey = privatePem === undefined ? undefined : parse('JWT_PRIVATE_KEY', () => parsePrivateKey(privatePem, algorithm));
  const previous = previousPems === undefined ? [] : (parse('JWT_PREVIOUS_PUBLIC_KEYS', () => parsePublicKeys(previousPems)) ?? []);
  return { jwtPrivateKey, jwtPreviousPublicKeys: Object.freeze(previous) };
}
