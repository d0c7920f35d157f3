import type { RedirectConfig } from '../redirects/allow-list.js';
import type { KeyObject } from 'node:crypto';
import type { Algorithm, AsymmetricAlgorithm, KeyRing } from './keys.js';

export type { Algorithm } from './keys.js';
export type { RedirectConfig } from '../redirects/allow-list.js';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export type LogFormat = 'json' | 'pretty';
/** The algorithms new password hashes are made with (PASSWORD_HASH_ALGORITHM). */
export type HashAlgorithm = 'bcrypt' | 'argon2id';

/**
 * The service's settings, read once from the environment by `loadConfig` and frozen, one part per
 * concern. Each class is handed the part it uses, never the whole.
 */
export interface Config {
  readonly server: ServerConfig;
  readonly database: DatabaseConfig;
  readonly secret: SecretConfig;
  readonly tokens: TokenConfig;
  readonly sessions: SessionConfig;
  readonly passwords: PasswordConfig;
  readonly account: AccountConfig;
  readonly mail: MailConfig;
  readonly limits: LimitsConfig;
  readonly pagination: PaginationConfig;
  readonly logging: LoggingConfig;
  readonly docs: DocsConfig;
  /** The web console at /console. */
  readonly console: ConsoleConfig;
  readonly metrics: MetricsConfig;
  readonly housekeeping: HousekeepingConfig;
  readonly audit: AuditConfig;
  readonly mfa: MfaConfig;
  readonly apiKeys: ApiKeyConfig;
  readonly organizations: OrganizationConfig;
  readonly webhooks: WebhookConfig;
  /** The URLs of upstream identity providers and OAuth clients that the service itself fetches. */
  readonly providers: ProviderUrlConfig;
  readonly emailCode: EmailCodeConfig;
  /** The service as an OpenID Connect provider for other applications. */
  readonly oidc: OidcConfig;
  /** Admins acting as a user through token exchange (RFC 8693) at the provider's token endpoint. */
  readonly impersonation: ImpersonationConfig;
  /** Where browser flows may send a person back to (AUTH_REDIRECT_URLS). */
  readonly redirects: RedirectConfig;
  /** The admin account made at start-up when none has its e-mail (ADMIN_EMAIL and ADMIN_PASSWORD). */
  readonly admin: AdminConfig | undefined;
  /** What the start should say about settings that are allowed but break a promise (production only). */
  readonly warnings: readonly string[];
}

export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  /** The version the health check and the served contract report. */
  readonly appVersion: string;
  /** Take the client IP from X-Forwarded-For (only behind a proxy that sets it). */
  readonly trustProxy: boolean;
  readonly maxBodyBytes: number;
  /** Body limit of POST /api/users/import alone, so that 1,000 rows fit. */
  readonly importMaxBodyBytes: number;
  /** Origins allowed to call the API from a browser; empty means CORS is off. */
  readonly corsOrigins: readonly string[];
  /** Worker processes (node:cluster); 1 runs the service in this process. */
  readonly webConcurrency: number;
  /** How long a stopping process waits for requests in flight before closing their connections. */
  readonly shutdownTimeoutSeconds: number;
  /** How long a client may take to send a request's headers, and the whole request. */
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  /** Open connections per process; more are closed as soon as they are accepted. */
  readonly maxConnections: number;
}

export interface DatabaseConfig {
  /** PostgreSQL connection string; when absent the embedded database in `dataDir` is used. */
  readonly url: string | undefined;
  /**
   * Whether the queries every request runs go to PostgreSQL as named statements, prepared once per
   * connection; off for a pooler that cannot keep them (PgBouncer in transaction mode before 1.21).
   */
  readonly preparedStatements: boolean;
  readonly dataDir: string;
  /** How long a command-line command waits for the server to release an embedded DATA_DIR. */
  readonly dataDirWaitSeconds: number;
}

export interface SecretConfig {
  /** SECRET_KEY: signs HS* tokens, seals queued mail and keys the login counters. */
  readonly key: string;
  /**
   * Where the key comes from: the SECRET_KEY setting; in development without it, the key kept in
   * DATA_DIR (`keptIn`, made on the first start); or, with nowhere to keep one (DATA_DIR=memory://),
   * a random key for this process only.
   */
  readonly source: 'setting' | 'data-dir' | 'random';
  /** The file the key is kept in, when `source` is `data-dir`. */
  readonly keptIn?: string;
}

export interface TokenConfig {
  readonly algorithm: Algorithm;
  /** The signing key and the retired keys that still verify, parsed once. */
  readonly keys: KeyRing;
  /** `iss` of every token issued, and the only issuer accepted; by default APP_URL. */
  readonly issuer: string;
  /** `aud` of every token issued, and the only audience accepted. */
  readonly audience: string;
  readonly accessTokenExpireMinutes: number;
  readonly refreshTokenExpireDays: number;
  /** Lifetime of the access token an admin gets to act as a user (IMPERSONATION_TOKEN_MINUTES). */
  readonly impersonationTokenMinutes: number;
}

export interface ImpersonationConfig {
  /** IMPERSONATION_ENABLED: the provider's token endpoint takes the token-exchange grant. */
  readonly enabled: boolean;
  /** IMPERSONATION_NOTICE: the user is told by mail when an admin starts acting as them. */
  readonly notice: boolean;
}

export interface SessionConfig {
  /** A session ends this many days after it was opened, however often it is refreshed. */
  readonly maxDays: number;
  readonly refreshReuseGraceSeconds: number;
  /** Sign-in (logins and refresh) waits until the account's e-mail address is verified. */
  readonly requireVerifiedEmail: boolean;
  /**
   * How recent a session's last authentication must be for its holder to add a way in (a passkey, a
   * TOTP app, recovery codes, an API key, a linked identity) without giving their password again.
   */
  readonly reauthMaxAgeMinutes: number;
}

export interface PasswordConfig {
  /** The algorithm of new hashes; a stored hash of another, or of a lower cost, is replaced at sign-in. */
  readonly hashAlgorithm: HashAlgorithm;
  readonly bcryptCost: number;
  readonly argon2MemoryKib: number;
  readonly argon2Iterations: number;
  /** Password hashes run at once; by default the cores, up to libuv's thread pool size. */
  readonly hashConcurrency: number;
  /** Hashes that may wait for a slot before more are refused with 503. */
  readonly hashQueueMax: number;
  /** Places in the password-hash queue (running or waiting) one caller may hold at once. */
  readonly hashCallerMax: number;
  /** The check of new passwords against known breaches. */
  readonly pwnedPasswords: PwnedPasswordsConfig;
}

/** PWNED_PASSWORDS_*: the Pwned Passwords range API, asked by k-anonymity. */
export interface PwnedPasswordsConfig {
  /** Refuse new passwords found in known breaches. */
  readonly enabled: boolean;
  /** The range API's base; the five-character prefix is appended. */
  readonly url: string;
  /** Past this, a new password is let through unchecked (logged and counted). */
  readonly timeoutMs: number;
}

/** The links and tokens of account mail: verification, e-mail change, password reset. */
export interface AccountConfig {
  /** Base of the links in e-mails, without a trailing slash. */
  readonly appUrl: string;
  readonly passwordResetExpireMinutes: number;
  readonly emailVerifyExpireHours: number;
  /** Least time between two reset mails to one account. */
  readonly passwordResetMailIntervalSeconds: number;
  /** Reset mails one account may be sent per hour. */
  readonly passwordResetMailsPerHour: number;
  /**
   * Serve the pages the e-mailed links open (/verify-email, /reset-password): by default when APP_URL is
   * unset or is this service's own address, since another front end has pages of its own.
   */
  readonly pagesEnabled: boolean;
}

/** EMAIL_CODE_*: signing in with a code or a link sent by e-mail. */
export interface EmailCodeConfig {
  /** Whether the two operations exist; off, they answer 404. */
  readonly enabled: boolean;
  /** A code sent to an address without an account creates the account when it is used. */
  readonly signup: boolean;
  /** How long a code and its link work. */
  readonly expireMinutes: number;
}

export type OidcRegistration = 'off' | 'token' | 'open';

export interface OidcConfig {
  /** Whether discovery and the /oauth2/ endpoints exist (OIDC_ENABLED). */
  readonly enabled: boolean;
  /**
   * The key ID tokens are signed with: JWT_PRIVATE_KEY's when ALGORITHM is RS256 or ES256, else
   * OIDC_PRIVATE_KEY's; undefined in development without either, when a key made and kept, sealed,
   * in the database is used.
   */
  readonly signingKey: { readonly key: KeyObject; readonly algorithm: AsymmetricAlgorithm } | undefined;
  /**
   * Beside an EC `signingKey`, the RSA key of OIDC_RSA_PRIVATE_KEY: RS256 is OpenID Connect's default
   * ID token algorithm, which clients that name none expect.
   */
  readonly rsaSigningKey: KeyObject | undefined;
  /**
   * Whether the keys not configured are made and kept, sealed, in the database (development): never
   * in production, which signs only with the keys it is given.
   */
  readonly makesKeys: boolean;
  /** Dynamic client registration (RFC 7591): off, with an initial access token, or open to anyone. */
  readonly registration: OidcRegistration;
  /** The initial access token registration asks for when `registration` is `token`. */
  readonly registrationToken: string | undefined;
  /** The product's name on the hosted pages (BRAND_NAME). */
  readonly brandName: string;
  /** How long a device authorization (RFC 8628) waits for the person (OIDC_DEVICE_CODE_EXPIRE_SECONDS): its `expires_in`. */
  readonly deviceCodeExpireSeconds: number;
}

export interface MailConfig {
  /** smtp:// or smtps:// URL; undefined writes messages to the log instead. */
  readonly smtpUrl: string | undefined;
  readonly from: string;
  /** Without SMTP_URL, whether the log line that takes the place of a message carries its link. */
  readonly logLinks: boolean;
  /** STARTTLS is required of an smtp:// server (production, unless SMTP_URL says `ignoreTLS=true`). */
  readonly smtpRequireTls: boolean;
  readonly pollIntervalMs: number;
  readonly retryBaseMs: number;
  readonly maxAttempts: number;
  /** How long a claimed message is held by one process; renewed while it is being sent. */
  readonly leaseMs: number;
  /** The domain of each message's Message-ID: the host of APP_URL. */
  readonly messageIdDomain: string;
}

export interface LimitsConfig {
  readonly rateLimitEnabled: boolean;
  /**
   * Where the counters live: this process's memory, or the service's PostgreSQL database, shared by
   * every process on it (the default when DATABASE_URL is set).
   */
  readonly store: 'memory' | 'postgres';
  /** Per client IP, on the operations that take credentials or tokens. */
  readonly authRateLimitPerMinute: number;
  /** Per client IP, on every other API operation (health, docs and metrics are never limited). */
  readonly rateLimitPerMinute: number;
  readonly loginMaxFailures: number;
  readonly loginLockoutMinutes: number;
  /** Failed sign-ins per account and hour, from any clients, that lock the account for everyone. */
  readonly loginAccountMaxFailures: number;
}

export interface PaginationConfig {
  readonly defaultPageSize: number;
  readonly maxPageSize: number;
}

export interface LoggingConfig {
  readonly level: LogLevel;
  /** JSON lines, or pino-pretty's colored lines for a developer's terminal. */
  readonly format: LogFormat;
}

export interface DocsConfig {
  readonly enabled: boolean;
}

export interface ConsoleConfig {
  /** Serve the console at /console (it signs in through the OpenID Connect provider). */
  readonly enabled: boolean;
  /** CONSOLE_DIR: the built console; console/dist beside the service when unset. */
  readonly folder?: string;
}

export interface MetricsConfig {
  /** Serve Prometheus metrics at /metrics. */
  readonly enabled: boolean;
  /** When set, /metrics requires `Authorization: Bearer <token>`. */
  readonly token: string | undefined;
  /** /metrics without a token on purpose (METRICS_PUBLIC=true). */
  readonly public: boolean;
  /** True when production turned /metrics off because it would have been public; said at start. */
  readonly withheld: boolean;
}

export interface HousekeepingConfig {
  /** Seconds between purges of spent sessions, tokens and mail; 0 turns the worker off. */
  readonly intervalSeconds: number;
  /** Rows deleted per statement, so that no purge holds many locks or runs long. */
  readonly batchSize: number;
  /** How long a revoked or expired session, a spent token or finished mail is kept before it is purged. */
  readonly retentionHours: number;
}

export interface AuditConfig {
  /** Audit events older than this many days are purged; undefined keeps them forever. */
  readonly retentionDays: number | undefined;
}

/** Second factors: TOTP authenticator apps and WebAuthn passkeys. */
export interface MfaConfig {
  readonly totp: TotpConfig;
  readonly webauthn: WebAuthnConfig;
}

export interface TotpConfig {
  /** The `issuer` of the otpauth:// URLs authenticator apps show (MFA_ISSUER). */
  readonly issuer: string;
}

/** The WebAuthn relying party passkeys are made for. */
export interface WebAuthnConfig {
  /** A domain, by default the host of APP_URL. */
  readonly rpId: string;
  /** The name authenticators show for the relying party. */
  readonly rpName: string;
  /** Origins a passkey ceremony may come from: the RP ID or its subdomains; by default the origin of APP_URL. */
  readonly origins: readonly string[];
}

/** Keys programs call the API with on a user's behalf. */
export interface ApiKeyConfig {
  /** The longest lifetime a key may be given (API_KEY_MAX_DAYS); new keys get 90 days, or this when shorter. */
  readonly maxDays: number;
}

/** Organisations: the deployment's customers, each a set of members with roles. */
export interface OrganizationConfig {
  /** Who may create one (ORG_CREATION): `anyone` with a verified e-mail address, or `admin`s only. */
  readonly creation: 'anyone' | 'admin';
  /** DNS_SERVERS: the resolvers that verify organisations' domains (`host[:port]`); empty: the system's. */
  readonly dnsServers: readonly string[];
  /** How long an invitation stays open (ORG_INVITATION_EXPIRE_MINUTES); a resend renews it. */
  readonly invitationExpireMinutes: number;
}

/** PROVIDER_ALLOW_PRIVATE_URLS: where the service may fetch a provider's or an OAuth client's URLs. */
export interface ProviderUrlConfig {
  /** Accept loopback, private and other non-public addresses (off in production, on in development and tests). */
  readonly allowPrivateUrls: boolean;
}

/** WEBHOOK_*: delivery of events to the endpoints admins register. */
export interface WebhookConfig {
  /** Accept endpoints on loopback, private and other non-public addresses, and plain http (development, tests). */
  readonly allowPrivateUrls: boolean;
  readonly pollIntervalMs: number;
  /** First retry delay; it doubles with each attempt, up to an hour. */
  readonly retryBaseMs: number;
  readonly maxAttempts: number;
  /** How long one attempt may take, connection included. */
  readonly timeoutMs: number;
  /** Delivered and given-up deliveries are deleted this many days after they finished. */
  readonly retentionDays: number;
}

export interface AdminConfig {
  readonly email: string;
  readonly password: string;
}
