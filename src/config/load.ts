import { randomBytes, type KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { isIP } from 'node:net';
import { isEmailAddress } from '../email-address.js';
import { parseRedirectRule, type RedirectRule } from '../redirects/allow-list.js';
import type {
  AccountConfig,
  AdminConfig,
  Algorithm,
  ApiKeyConfig,
  OrganizationConfig,
  AuditConfig,
  Config,
  DatabaseConfig,
  HashAlgorithm,
  HousekeepingConfig,
  LimitsConfig,
  LogFormat,
  LoggingConfig,
  LogLevel,
  MailConfig,
  MfaConfig,
  OidcConfig,
  OidcRegistration,
  RedirectConfig,
  MetricsConfig,
  PaginationConfig,
  PasswordConfig,
  PwnedPasswordsConfig,
  SecretConfig,
  ServerConfig,
  SessionConfig,
  TokenConfig,
  WebhookConfig,
} from './config.js';
import {
  algorithmOf,
  asymmetricKeyRing,
  KeyError,
  parsePrivateKey,
  parsePublicKeys,
  secretKeyRing,
  parseSigningKey,
  type AsymmetricAlgorithm,
} from './keys.js';
import { ConfigError, EnvReader, type Env } from './reader.js';

const ALGORITHMS: readonly Algorithm[] = ['HS256', 'HS384', 'HS512', 'RS256', 'ES256'];
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];
const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];
const HASH_ALGORITHMS: readonly HashAlgorithm[] = ['bcrypt', 'argon2id'];
/**
 * The shortest SECRET_KEY, in bytes, per algorithm: an HMAC key as long as the hash's output
 * (RFC 7518 §3.2). With RS256 and ES256 the secret only seals queued mail.
 */
const MIN_SECRET_BYTES: Record<Algorithm, number> = { HS256: 32, HS384: 48, HS512: 64, RS256: 32, ES256: 32 };

/**
 * Parses the environment into a frozen Config. Every problem is collected and reported at once,
 * so a misconfigured deployment is fixed in one round. `stdoutIsTty` picks the default log format.
 */
export function loadConfig(env: Env, stdoutIsTty = false, keptSecret?: KeptSecret): Config {
  const read = new EnvReader(env);
  const nodeEnv = read.string('NODE_ENV') ?? 'development';
  const production = nodeEnv === 'production';

  const server = serverPart(read);
  const database = databasePart(read);
  const pagination = paginationPart(read);
  const admin = adminPart(read);
  const account = accountPart(read, server);
  const mail = mailPart(read, production, account.appUrl);
  const limits = limitsPart(read, database);
  const algorithm = read.oneOf('ALGORITHM', ALGORITHMS, 'HS256', (s) => s.toUpperCase());
  const secret = secretPart(read, algorithm, production, database, keptSecret);
  const signing = signingKeys(read, algorithm);
  const sessions = sessionPart(read);
  const tokens = tokenSettings(read, account.appUrl);
  const metrics = metricsPart(read, production);
  const housekeeping = housekeepingPart(read);
  const audit = auditPart(read);
  const mfa = mfaPart(read, account.appUrl);
  const apiKeys = apiKeyPart(read);
  const organizations = Object.freeze<OrganizationConfig>({
    creation: read.oneOf('ORG_CREATION', ['anyone', 'admin'] as const, 'anyone', (s) => s.toLowerCase()),
    dnsServers: dnsServers(read),
    invitationExpireMinutes: read.integer('ORG_INVITATION_EXPIRE_MINUTES', 10080, 1, 525600),
  });
  const webhooks = webhookPart(read);
  const providers = Object.freeze({ allowPrivateUrls: read.boolean('PROVIDER_ALLOW_PRIVATE_URLS', !production) });
  const redirects = redirectPart(read, account.appUrl);
  const passwords = passwordPart(read, env);
  const logging = loggingPart(read, production, nodeEnv === 'development' && stdoutIsTty);
  const docs = { enabled: read.boolean('DOCS_ENABLED', true) };
  const consoleFolder = read.string('CONSOLE_DIR');
  const consolePart = Object.freeze({
    enabled: read.boolean('CONSOLE_ENABLED', true),
    ...(consoleFolder ? { folder: consoleFolder } : {}),
  });
  const emailCode = Object.freeze({
    enabled: read.boolean('EMAIL_CODE_ENABLED', true),
    signup: read.boolean('EMAIL_CODE_SIGNUP', false),
    expireMinutes: read.integer('EMAIL_CODE_EXPIRE_MINUTES', 10, 1, 60),
  });

  const oidc = oidcPart(read, production, signing);
  const impersonation = Object.freeze({
    enabled: read.boolean('IMPERSONATION_ENABLED', false),
    notice: read.boolean('IMPERSONATION_NOTICE', false),
  });

  // Settings that only make sense together.
  if (limits.store === 'postgres' && database.url === undefined) {
    read.problem('RATE_LIMIT_STORE=postgres needs DATABASE_URL (the embedded database serves one process only)');
  }
  if (server.webConcurrency > 1 && database.url === undefined) {
    read.problem('WEB_CONCURRENCY above 1 needs DATABASE_URL (the embedded database serves one process only)');
  }
  if (sessions.maxDays < tokens.refreshTokenExpireDays) {
    read.problem(
      `SESSION_MAX_DAYS (${sessions.maxDays}) must not be less than REFRESH_TOKEN_EXPIRE_DAYS (${tokens.refreshTokenExpireDays})`,
    );
  }

  if (read.problems.length > 0) throw new ConfigError(read.problems);
  const warnings = production ? productionWarnings(read, database, limits) : [];
  if (production && oidc.enabled && oidc.signingKey?.algorithm === 'ES256' && oidc.rsaSigningKey === undefined) {
    warnings.push(
      'ID tokens are signed with an EC key only (ES256): OpenID Connect applications that expect its default, RS256, ' +
        'cannot verify them; set OIDC_RSA_PRIVATE_KEY to an RSA private key to sign RS256 beside ES256',
    );
  }
  if (production && !oidc.enabled && read.string('OIDC_ENABLED') === undefined) {
    warnings.push(
      'the OpenID Connect provider is off: in production it needs a signing key, JWT_PRIVATE_KEY with ALGORITHM=RS256 or ES256, ' +
        'or OIDC_PRIVATE_KEY; set one, or OIDC_ENABLED=false to say so',
    );
  }
  const keys = signing ? asymmetricKeyRing(signing.algorithm, signing.privateKey, signing.retired) : secretKeyRing(algorithm, secret.key);
  return Object.freeze<Config>({
    server,
    database,
    secret,
    tokens: Object.freeze<TokenConfig>({ ...tokens, algorithm, keys }),
    sessions,
    passwords,
    account,
    mail,
    limits,
    pagination,
    logging,
    docs: Object.freeze(docs),
    console: consolePart,
    metrics,
    housekeeping,
    audit,
    mfa,
    apiKeys,
    organizations,
    webhooks,
    providers,
    emailCode,
    oidc,
    impersonation,
    redirects,
    admin,
    warnings: Object.freeze(warnings),
  });
}

/**
 * What a production start allows but should say: settings that hold on one machine and break a
 * promise once the service runs on several behind a load balancer.
 */
function productionWarnings(read: EnvReader, database: DatabaseConfig, limits: LimitsConfig): string[] {
  const warnings: string[] = [];
  if (database.url !== undefined && limits.rateLimitEnabled && limits.store === 'memory') {
    warnings.push(
      'RATE_LIMIT_STORE=memory: each process counts rate limits and failed sign-ins on its own, so behind a load balancer ' +
        'every limit and lockout is multiplied by the number of processes; leave it unset (postgres) to share the counters',
    );
  }
  if (read.string('APP_URL') === undefined) {
    const issuer = read.string('JWT_ISSUER') === undefined ? ' and the token issuer (JWT_ISSUER)' : '';
    warnings.push(
      `APP_URL is not set: links in e-mails${issuer} default to this process's own address, ` +
        'which differs between machines; set the same public APP_URL on every machine',
    );
  }
  return warnings;
}

function serverPart(read: EnvReader): ServerConfig {
  const corsOrigins = (read.string('CORS_ORIGINS') ?? '')
    .split(',')
    .map((origin) => origin.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  for (const origin of corsOrigins) {
    if (origin !== '*' && !/^https?:\/\/[^/]+$/.test(origin))
      read.problem(`CORS_ORIGINS: "${origin}" is not an origin like https://app.example.com`);
  }
  const webConcurrency =
    read.string('WEB_CONCURRENCY')?.toLowerCase() === 'auto' ? availableParallelism() : read.integer('WEB_CONCURRENCY', 1, 1, 256);
  const headersTimeoutMs = read.integer('HEADERS_TIMEOUT_MS', 20_000, 100, 3_600_000);
  const requestTimeoutMs = read.integer('REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    read.problem(`HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }
  return Object.freeze({
    host: read.string('HOST') ?? '127.0.0.1',
    port: read.integer('PORT', 8000, 0, 65535),
    appVersion: read.string('APP_VERSION') ?? '1.0.0',
    trustProxy: read.boolean('TRUST_PROXY', false),
    maxBodyBytes: read.integer('MAX_BODY_BYTES', 64 * 1024, 1024, 50 * 1024 * 1024),
    importMaxBodyBytes: read.integer('IMPORT_MAX_BODY_BYTES', 2 * 1024 * 1024, 1024, 50 * 1024 * 1024),
    corsOrigins: Object.freeze(corsOrigins),
    webConcurrency,
    shutdownTimeoutSeconds: read.integer('SHUTDOWN_TIMEOUT_SECONDS', 10, 0, 3600),
    headersTimeoutMs,
    requestTimeoutMs,
    maxConnections: read.integer('MAX_CONNECTIONS', 10_000, 1, 1_000_000),
  });
}

function databasePart(read: EnvReader): DatabaseConfig {
  const url = read.string('DATABASE_URL');
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) read.problem('DATABASE_URL must be a postgres:// or postgresql:// URL');
  return Object.freeze({
    url,
    preparedStatements: read.boolean('DATABASE_PREPARED_STATEMENTS', true),
    dataDir: read.string('DATA_DIR') ?? './data',
    dataDirWaitSeconds: read.integer('DATA_DIR_WAIT_SECONDS', 30, 0, 3600),
  });
}

function paginationPart(read: EnvReader): PaginationConfig {
  const maxPageSize = read.integer('MAX_PAGE_SIZE', 100, 1, 1000);
  const defaultPageSize = read.integer('DEFAULT_PAGE_SIZE', 20, 1, 1000);
  if (defaultPageSize > maxPageSize) read.problem(`DEFAULT_PAGE_SIZE (${defaultPageSize}) must not exceed MAX_PAGE_SIZE (${maxPageSize})`);
  return Object.freeze({ defaultPageSize, maxPageSize });
}

function adminPart(read: EnvReader): AdminConfig | undefined {
  const email = read.string('ADMIN_EMAIL');
  const password = read.verbatim('ADMIN_PASSWORD');
  if ((email === undefined) !== (password === undefined)) read.problem('ADMIN_EMAIL and ADMIN_PASSWORD go together: set both or neither');
  if (email !== undefined && !isEmailAddress(email)) read.problem(`ADMIN_EMAIL must be an e-mail address, got "${email}"`);
  if (password !== undefined && (password.length < 8 || Buffer.byteLength(password, 'utf8') > 72)) {
    read.problem('ADMIN_PASSWORD must be at least 8 characters and at most 72 bytes');
  }
  return email !== undefined && password !== undefined ? Object.freeze({ email, password }) : undefined;
}

/**
 * Bind addresses whose service a browser on this machine reaches as `localhost`: the default
 * APP_URL names it so, because browsers allow passkeys on http://localhost and never on an IP address.
 */
const LOCAL_HOSTS = new Set(['127.0.0.1', '::1', '0.0.0.0', '::', 'localhost']);

function accountPart(read: EnvReader, server: ServerConfig): AccountConfig {
  const { host, port } = server;
  const appUrlSetting = read.string('APP_URL');
  const appUrl = (appUrlSetting ?? `http://${LOCAL_HOSTS.has(host) ? 'localhost' : host}:${port}`).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(appUrl) || !URL.canParse(appUrl)) {
    read.problem(`APP_URL must be the service's public address with its scheme, such as https://accounts.example.com; got "${appUrl}"`);
  }
  return Object.freeze({
    appUrl,
    pagesEnabled: read.boolean('ACCOUNT_PAGES_ENABLED', appUrlSetting === undefined || isOwnAddress(appUrl, host, port)),
    passwordResetExpireMinutes: read.integer('PASSWORD_RESET_EXPIRE_MINUTES', 30, 1, 24 * 60),
    emailVerifyExpireHours: read.integer('EMAIL_VERIFY_EXPIRE_HOURS', 24, 1, 24 * 30),
    passwordResetMailIntervalSeconds: read.integer('PASSWORD_RESET_MAIL_INTERVAL_SECONDS', 60, 0, 24 * 3600),
    passwordResetMailsPerHour: read.integer('PASSWORD_RESET_MAILS_PER_HOUR', 5, 1, 1000),
  });
}

/** Whether `url` reaches this process directly: a loopback name or address, or HOST, on PORT. */
function isOwnAddress(url: string, host: string, port: number): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const name = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const own = ['localhost', '127.0.0.1', '::1', host.toLowerCase()];
  const urlPort = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
  return own.includes(name) && urlPort === port;
}

function mailPart(read: EnvReader, production: boolean, appUrl: string): MailConfig {
  const smtpUrl = read.string('SMTP_URL');
  if (smtpUrl !== undefined && !/^smtps?:\/\/[^/]/.test(smtpUrl)) read.problem('SMTP_URL must be an smtp:// or smtps:// URL');
  const logLinks = read.boolean('MAIL_LOG_LINKS', !production);
  if (production && smtpUrl === undefined && !logLinks) {
    read.problem(
      'SMTP_URL is required when NODE_ENV=production: without it every e-mail, reset and verification links included, ' +
        'would be written to the log; set MAIL_LOG_LINKS=true if that is really wanted',
    );
  }
  return Object.freeze({
    smtpUrl,
    from: read.string('MAIL_FROM') ?? 'Account Service <no-reply@localhost>',
    logLinks,
    smtpRequireTls: production && smtpUrl !== undefined && requiresStartTls(smtpUrl, read),
    pollIntervalMs: read.integer('MAIL_POLL_INTERVAL_MS', 2000, 50, 3_600_000),
    retryBaseMs: read.integer('MAIL_RETRY_BASE_MS', 5000, 10, 3_600_000),
    maxAttempts: read.integer('MAIL_MAX_ATTEMPTS', 10, 1, 100),
    leaseMs: read.integer('MAIL_LEASE_MS', 60_000, 300, 3_600_000),
    messageIdDomain: URL.canParse(appUrl) ? new URL(appUrl).hostname : 'localhost',
  });
}

function limitsPart(read: EnvReader, database: DatabaseConfig): LimitsConfig {
  return Object.freeze({
    rateLimitEnabled: read.boolean('RATE_LIMIT_ENABLED', true),
    // With PostgreSQL the counters are shared by default: several processes on one database are one service.
    store: read.oneOf('RATE_LIMIT_STORE', ['memory', 'postgres'] as const, database.url === undefined ? 'memory' : 'postgres', (s) =>
      s.toLowerCase(),
    ),
    authRateLimitPerMinute: read.integer('AUTH_RATE_LIMIT_PER_MINUTE', 20, 1, 1_000_000),
    rateLimitPerMinute: read.integer('RATE_LIMIT_PER_MINUTE', 600, 1, 10_000_000),
    loginMaxFailures: read.integer('LOGIN_MAX_FAILURES', 5, 1, 1000),
    loginLockoutMinutes: read.integer('LOGIN_LOCKOUT_MINUTES', 15, 1, 24 * 60),
    loginAccountMaxFailures: read.integer('LOGIN_ACCOUNT_MAX_FAILURES', 100, 1, 1_000_000),
  });
}

/**
 * The development key kept in DATA_DIR (made on the first call) and the file it is kept in: the
 * process entry points pass one (src/config/process.ts); without it a development start, as in the
 * tests, makes a random key. It throws, with a message for the operator, when DATA_DIR cannot keep one.
 */
export type KeptSecret = (dataDir: string) => { key: string; path: string };

function secretPart(
  read: EnvReader,
  algorithm: Algorithm,
  production: boolean,
  database: DatabaseConfig,
  keptSecret: KeptSecret | undefined,
): SecretConfig {
  const minBytes = MIN_SECRET_BYTES[algorithm];
  const key = read.string('SECRET_KEY');
  if (key !== undefined) {
    const bytes = Buffer.byteLength(key, 'utf8');
    if (bytes < minBytes) read.problem(`SECRET_KEY must be at least ${minBytes} bytes with ${algorithm}, got ${bytes}`);
    return Object.freeze({ key, source: 'setting' });
  }
  if (production) {
    read.problem(`SECRET_KEY is required when NODE_ENV=production (at least ${minBytes} bytes with ${algorithm})`);
    return Object.freeze({ key: '', source: 'setting' });
  }
  // An in-memory database forgets everything at exit, so there is nothing for a kept key to keep open.
  if (keptSecret === undefined || database.dataDir.startsWith('memory://')) {
    return Object.freeze({ key: randomBytes(64).toString('base64url'), source: 'random' });
  }
  const kept = keptSecret(database.dataDir);
  return Object.freeze({ key: kept.key, source: 'data-dir', keptIn: kept.path });
}

/**
 * RS256 and ES256 sign with JWT_PRIVATE_KEY and also verify with JWT_PREVIOUS_PUBLIC_KEYS; HS*
 * signs with SECRET_KEY, and keys set for it are refused rather than silently unused.
 */
function signingKeys(
  read: EnvReader,
  algorithm: Algorithm,
): { algorithm: AsymmetricAlgorithm; privateKey: KeyObject; retired: readonly KeyObject[] } | undefined {
  const privatePem = read.string('JWT_PRIVATE_KEY');
  const previousPems = read.string('JWT_PREVIOUS_PUBLIC_KEYS');
  if (algorithm !== 'RS256' && algorithm !== 'ES256') {
    if (privatePem !== undefined)
      read.problem(`JWT_PRIVATE_KEY is set but ALGORITHM is ${algorithm}; set ALGORITHM=RS256 or ES256 to sign with it`);
    if (previousPems !== undefined)
      read.problem(`JWT_PREVIOUS_PUBLIC_KEYS is set but ALGORITHM is ${algorithm}; it applies to RS256 and ES256 only`);
    return undefined;
  }
  const parse = <T>(name: string, build: () => T): T | undefined => {
    try {
      return build();
    } catch (error) {
      if (!(error instanceof KeyError)) throw error;
      read.problem(`${name} ${error.message}`);
      return undefined;
    }
  };
  if (privatePem === undefined) read.problem(`JWT_PRIVATE_KEY is required when ALGORITHM is ${algorithm} (a PEM private key)`);
  const privateKey = privatePem === undefined ? undefined : parse('JWT_PRIVATE_KEY', () => parsePrivateKey(privatePem, algorithm));
  const retired = previousPems === undefined ? [] : (parse('JWT_PREVIOUS_PUBLIC_KEYS', () => parsePublicKeys(previousPems)) ?? []);
  return privateKey && { algorithm, privateKey, retired: Object.freeze(retired) };
}

const REGISTRATION_MODES: readonly OidcRegistration[] = ['off', 'token', 'open'];

/**
 * The OpenID Connect provider. ID tokens are signed with the API's own key when it is asymmetric,
 * else with OIDC_PRIVATE_KEY. Production never signs with a key it made itself: OIDC_ENABLED=true
 * without a key is refused, and the provider left at its default stays off (with a warning).
 */
function oidcPart(
  read: EnvReader,
  production: boolean,
  signing: { algorithm: AsymmetricAlgorithm; privateKey: KeyObject } | undefined,
): OidcConfig {
  const explicit = read.string('OIDC_ENABLED') !== undefined;
  let enabled = read.boolean('OIDC_ENABLED', true);
  const pem = read.string('OIDC_PRIVATE_KEY');
  let signingKey: OidcConfig['signingKey'];
  if (signing) {
    if (pem !== undefined)
      read.problem('OIDC_PRIVATE_KEY is set but ID tokens are signed with JWT_PRIVATE_KEY when ALGORITHM is RS256 or ES256; remove one');
    signingKey = Object.freeze({ key: signing.privateKey, algorithm: signing.algorithm });
  } else if (pem !== undefined) {
    try {
      const key = parseSigningKey(pem);
      signingKey = Object.freeze({ key, algorithm: algorithmOf(key) });
    } catch (error) {
      if (!(error instanceof KeyError)) throw error;
      read.problem(`OIDC_PRIVATE_KEY ${error.message}`);
    }
  }
  if (production && enabled && signingKey === undefined && pem === undefined) {
    if (explicit) {
      read.problem(
        'OIDC_ENABLED=true needs a signing key when NODE_ENV=production: JWT_PRIVATE_KEY with ALGORITHM=RS256 or ES256, or OIDC_PRIVATE_KEY (RSA or EC P-256)',
      );
    }
    enabled = false;
  }
  const rsaPem = read.string('OIDC_RSA_PRIVATE_KEY');
  let rsaSigningKey: KeyObject | undefined;
  if (rsaPem !== undefined) {
    try {
      rsaSigningKey = parseSigningKey(rsaPem);
      if (algorithmOf(rsaSigningKey) !== 'RS256') throw new KeyError('is an EC key; it must be an RSA private key (RS256)');
    } catch (error) {
      if (!(error instanceof KeyError)) throw error;
      read.problem(`OIDC_RSA_PRIVATE_KEY ${error.message}`);
      rsaSigningKey = undefined;
    }
    if (rsaSigningKey && signingKey?.algorithm !== 'ES256') {
      read.problem(
        'OIDC_RSA_PRIVATE_KEY is set but ID tokens are signed with an EC key only beside it: ALGORITHM=ES256, or an EC OIDC_PRIVATE_KEY; remove it',
      );
    }
  }
  const registration = read.oneOf('OIDC_REGISTRATION', REGISTRATION_MODES, 'off', (s) => s.toLowerCase());
  const registrationToken = read.string('OIDC_REGISTRATION_TOKEN');
  if (registration === 'token' && registrationToken === undefined) {
    read.problem('OIDC_REGISTRATION=token needs OIDC_REGISTRATION_TOKEN, the initial access token registration asks for');
  }
  if (registrationToken !== undefined && Buffer.byteLength(registrationToken) < 16) {
    read.problem('OIDC_REGISTRATION_TOKEN must be at least 16 bytes');
  }
  return Object.freeze({
    enabled,
    signingKey,
    rsaSigningKey,
    makesKeys: !production,
    registration,
    registrationToken,
    brandName: read.string('BRAND_NAME') ?? 'Account Service',
    deviceCodeExpireSeconds: read.integer('OIDC_DEVICE_CODE_EXPIRE_SECONDS', 600, 60, 1800),
  });
}

function tokenSettings(read: EnvReader, appUrl: string): Omit<TokenConfig, 'algorithm' | 'keys'> {
  return {
    issuer: read.string('JWT_ISSUER') ?? appUrl,
    audience: read.string('JWT_AUDIENCE') ?? 'account-service',
    accessTokenExpireMinutes: read.integer('ACCESS_TOKEN_EXPIRE_MINUTES', 30, 1, 24 * 60),
    refreshTokenExpireDays: read.integer('REFRESH_TOKEN_EXPIRE_DAYS', 7, 1, 365),
    impersonationTokenMinutes: read.integer('IMPERSONATION_TOKEN_MINUTES', 15, 1, 60),
  };
}

function sessionPart(read: EnvReader): SessionConfig {
  return Object.freeze({
    maxDays: read.integer('SESSION_MAX_DAYS', 30, 1, 3650),
    refreshReuseGraceSeconds: read.integer('REFRESH_REUSE_GRACE_SECONDS', 10, 0, 3600),
    requireVerifiedEmail: read.boolean('REQUIRE_VERIFIED_EMAIL', false),
    reauthMaxAgeMinutes: read.integer('REAUTH_MAX_AGE_MINUTES', 5, 1, 24 * 60),
  });
}

function metricsPart(read: EnvReader, production: boolean): MetricsConfig {
  const token = read.string('METRICS_TOKEN');
  const isPublic = read.boolean('METRICS_PUBLIC', false);
  const enabled = read.boolean('METRICS_ENABLED', true);
  // A public scrape tells anyone the traffic, the error rates and the sign-in failures: in production it is opt-in.
  const withheld = production && enabled && token === undefined && !isPublic;
  return Object.freeze({ enabled: enabled && !withheld, token, public: isPublic, withheld });
}

function housekeepingPart(read: EnvReader): HousekeepingConfig {
  return Object.freeze({
    intervalSeconds: read.integer('HOUSEKEEPING_INTERVAL_SECONDS', 3600, 0, 7 * 24 * 3600),
    batchSize: read.integer('HOUSEKEEPING_BATCH_SIZE', 1000, 1, 100_000),
    // Rows stay a while after they stop mattering, for whoever looks into a recent sign-out or failed delivery.
    retentionHours: read.integer('HOUSEKEEPING_RETENTION_HOURS', 24, 1, 24 * 365),
  });
}

function apiKeyPart(read: EnvReader): ApiKeyConfig {
  return Object.freeze({ maxDays: read.integer('API_KEY_MAX_DAYS', 365, 1, 365) });
}

function auditPart(read: EnvReader): AuditConfig {
  const set = read.string('AUDIT_RETENTION_DAYS') !== undefined;
  return Object.freeze({ retentionDays: set ? read.integer('AUDIT_RETENTION_DAYS', 0, 1, 100 * 365) : undefined });
}

function redirectPart(read: EnvReader, appUrl: string): RedirectConfig {
  // An APP_URL that is not a URL is reported already; the allow-list is then left empty.
  const fallback = URL.canParse(appUrl) ? `${new URL(appUrl).origin}/*` : '';
  const entries = (read.string('AUTH_REDIRECT_URLS') ?? fallback)
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const allowed: RedirectRule[] = [];
  for (const entry of entries) {
    const rule = parseRedirectRule(entry);
    if (typeof rule === 'string') read.problem(`AUTH_REDIRECT_URLS: ${rule}`);
    else allowed.push(rule);
  }
  return Object.freeze({ allowed: Object.freeze(allowed) });
}

function webhookPart(read: EnvReader): WebhookConfig {
  return Object.freeze({
    allowPrivateUrls: read.boolean('WEBHOOK_ALLOW_PRIVATE_URLS', false),
    pollIntervalMs: read.integer('WEBHOOK_POLL_INTERVAL_MS', 2000, 50, 3_600_000),
    retryBaseMs: read.integer('WEBHOOK_RETRY_BASE_MS', 5000, 10, 3_600_000),
    maxAttempts: read.integer('WEBHOOK_MAX_ATTEMPTS', 10, 1, 100),
    timeoutMs: read.integer('WEBHOOK_TIMEOUT_MS', 5000, 100, 60_000),
    retentionDays: read.integer('WEBHOOK_RETENTION_DAYS', 30, 1, 3650),
  });
}

function passwordPart(read: EnvReader, env: Env): PasswordConfig {
  return Object.freeze({
    hashAlgorithm: read.oneOf('PASSWORD_HASH_ALGORITHM', HASH_ALGORITHMS, 'bcrypt', (s) => s.toLowerCase()),
    bcryptCost: read.integer('BCRYPT_COST', 12, 4, 31),
    // OWASP's least argon2id setting: 19 MiB, two passes, one lane.
    argon2MemoryKib: read.integer('ARGON2_MEMORY_KIB', 19_456, 1024, 4 * 1024 * 1024),
    argon2Iterations: read.integer('ARGON2_ITERATIONS', 2, 1, 100),
    hashConcurrency: read.integer('PASSWORD_HASH_CONCURRENCY', defaultHashConcurrency(env), 1, 1024),
    hashQueueMax: read.integer('PASSWORD_HASH_QUEUE_MAX', 16, 0, 100_000),
    hashCallerMax: read.integer('PASSWORD_HASH_CALLER_MAX', 2, 1, 100_000),
    pwnedPasswords: pwnedPasswordsPart(read),
  });
}

function pwnedPasswordsPart(read: EnvReader): PwnedPasswordsConfig {
  const url = read.string('PWNED_PASSWORDS_URL') ?? 'https://api.pwnedpasswords.com/range/';
  if (!/^https?:\/\/[^/]/.test(url)) read.problem(`PWNED_PASSWORDS_URL must be an http:// or https:// URL, got "${url}"`);
  return Object.freeze({
    enabled: read.boolean('PWNED_PASSWORDS_CHECK', false),
    url,
    timeoutMs: read.integer('PWNED_PASSWORDS_TIMEOUT_MS', 1500, 50, 60_000),
  });
}

function loggingPart(read: EnvReader, production: boolean, developerAtTerminal: boolean): LoggingConfig {
  return Object.freeze({
    level: read.oneOf('LOG_LEVEL', LOG_LEVELS, production ? 'info' : 'debug', (s) => s.toLowerCase()),
    // Pretty only for a person at a terminal; anything that collects the output gets JSON.
    format: read.oneOf('LOG_FORMAT', LOG_FORMATS, developerAtTerminal ? 'pretty' : 'json', (s) => s.toLowerCase()),
  });
}

/**
 * Whether an SMTP_URL must upgrade with STARTTLS: smtp:// does unless its query says `ignoreTLS=true`
 * (a relay without TLS on the same host or network); smtps:// is TLS from the start. A URL that only
 * says `requireTLS=false` would send in clear to anyone who strips STARTTLS from the greeting, so in
 * production it is refused rather than read as a quiet opt-out.
 */
function requiresStartTls(smtpUrl: string, read: EnvReader): boolean {
  let url: URL;
  try {
    url = new URL(smtpUrl);
  } catch {
    return false; // already reported as not an smtp:// URL
  }
  if (url.protocol !== 'smtp:') return false;
  if (url.searchParams.get('ignoreTLS') === 'true') return false;
  if (url.searchParams.get('requireTLS') === 'false') {
    read.problem('SMTP_URL says requireTLS=false: in production say ignoreTLS=true for a relay without TLS, or leave STARTTLS required');
  }
  return true;
}

/** One hash per core, but no more than libuv's thread pool (UV_THREADPOOL_SIZE, 4 by default) runs at once. */
function defaultHashConcurrency(env: Env): number {
  const pool = Number(env.UV_THREADPOOL_SIZE) || 4;
  return Math.max(1, Math.min(availableParallelism(), pool));
}

/**
 * The TOTP issuer and the WebAuthn relying party: its id is a domain (no scheme, port or path), and
 * every origin a ceremony may come from must be that domain or one of its subdomains, as browsers require.
 */
function mfaPart(read: EnvReader, appUrl: string): MfaConfig {
  let appOrigin = '';
  let appHost = '';
  try {
    const url = new URL(appUrl);
    appOrigin = url.origin;
    appHost = url.hostname;
  } catch {
    // already reported as not an http(s) URL
  }
  const rpIdSetting = read.string('WEBAUTHN_RP_ID');
  // Browsers refuse an IP address as the relying party (the default APP_URL's 127.0.0.1 among them), and
  // treat http://localhost as secure: such an APP_URL makes passkeys work on localhost, at APP_URL's port.
  const onLocalhost = rpIdSetting === undefined && isIP(appHost.replace(/^\[|\]$/g, '')) !== 0;
  if (onLocalhost) {
    const local = new URL(appOrigin);
    local.hostname = 'localhost';
    appOrigin = local.origin;
  }
  const rpId = (rpIdSetting ?? (onLocalhost ? 'localhost' : appHost)).toLowerCase();
  if (rpIdSetting !== undefined && !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(rpId)) {
    read.problem(`WEBAUTHN_RP_ID must be a domain name such as example.com (no scheme, port or path), got "${rpIdSetting}"`);
  }
  const originsSetting = read.string('WEBAUTHN_ORIGINS');
  const origins =
    originsSetting === undefined
      ? [appOrigin].filter(Boolean)
      : originsSetting
          .split(',')
          .map((origin) => origin.trim().replace(/\/+$/, ''))
          .filter(Boolean);
  for (const origin of origins) {
    let host: string | undefined;
    try {
      const url = new URL(origin);
      if (/^https?:$/.test(url.protocol) && url.origin === origin) host = url.hostname;
    } catch {
      host = undefined;
    }
    if (host === undefined) read.problem(`WEBAUTHN_ORIGINS: "${origin}" is not an origin like https://app.example.com`);
    else if (rpId !== '' && host !== rpId && !host.endsWith(`.${rpId}`)) {
      read.problem(`WEBAUTHN_ORIGINS: "${origin}" is not on WEBAUTHN_RP_ID "${rpId}" or a subdomain of it`);
    }
  }
  return Object.freeze({
    totp: Object.freeze({ issuer: read.string('MFA_ISSUER') ?? 'Account Service' }),
    webauthn: Object.freeze({ rpId, rpName: read.string('WEBAUTHN_RP_NAME') ?? 'Account Service', origins: Object.freeze(origins) }),
  });
}

/** DNS_SERVERS: comma-separated `host[:port]` (an IPv6 address in brackets with a port); none: the system's. */
function dnsServers(read: EnvReader): readonly string[] {
  const servers = (read.string('DNS_SERVERS') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const server of servers) {
    const match = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d{1,5}))?$/.exec(server) ?? /^([0-9a-fA-F:]+)$/.exec(server);
    const host = match?.[1] ?? match?.[2];
    const port = match?.[3] === undefined ? 53 : Number(match[3]);
    if (!host || isIP(host) === 0 || port < 1 || port > 65535) {
      read.problem(`DNS_SERVERS: "${server}" is not an IP address with an optional port (1.1.1.1, 10.0.0.2:5353, [2606:4700::1111]:53)`);
    }
  }
  return Object.freeze(servers);
}
