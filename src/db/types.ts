import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction, Updateable } from 'kysely';

/** A moment the database fills in (`now()`) unless given. */
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** A moment every row is given. */
export type GivenTimestamp = ColumnType<Date, Date | string, Date | string>;
/** A moment that has not come while null. */
export type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface UserTable {
  id: Generated<number>;
  email: string;
  name: string;
  password_hash: string;
  role: 'user' | 'admin';
  is_active: Generated<boolean>;
  email_verified: Generated<boolean>;
  /** A new address the user asked for, until the link sent to it is followed. */
  pending_email: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export type UserRow = Selectable<UserTable>;
export type NewUserRow = Insertable<UserTable>;
export type UserUpdate = Updateable<UserTable>;

export interface SessionTable {
  id: string;
  user_id: number;
  refresh_token_hash: string;
  previous_token_hash: string | null;
  /** Tokens handed out by answers within the grace period before they repeated the rotation's token. */
  grace_token_hashes: ColumnType<string[], string[] | undefined, string[]>;
  rotated_at: NullableTimestamp;
  /** The current refresh token, sealed; set by each rotation, for the answers within its grace period. */
  refresh_token_sealed: ColumnType<string | null, string | null | undefined, string | null>;
  ip: string | null;
  user_agent: string | null;
  created_at: Timestamp;
  last_used_at: Timestamp;
  expires_at: GivenTimestamp;
  revoked_at: NullableTimestamp;
  /** How the session was signed in: RFC 8176 values such as `pwd`, `otp`, `hwk`, `mfa`. */
  amr: ColumnType<string[], string[] | undefined, string[]>;
  aal: ColumnType<AssuranceLevel, AssuranceLevel | undefined, AssuranceLevel>;
  /** The upstream provider (its slug) the session was signed in with; null for the service's own credentials. */
  provider: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the holder last proved who they are: the sign-in that opened it, or a re-authentication since; never a refresh. */
  authenticated_at: Timestamp;
  /** The organisation the session acts for (its access tokens' `org_id`); null for none. */
  organization_id: ColumnType<number | null, number | null | undefined, number | null>;
}

export type SessionRow = Selectable<SessionTable>;
export type NewSessionRow = Insertable<SessionTable>;

/** Authenticator assurance: `aal2` once a second factor (or a verified passkey) has been shown. */
export type AssuranceLevel = 'aal1' | 'aal2';

export type FactorType = 'totp' | 'webauthn';

export interface MfaFactorTable {
  id: Generated<number>;
  user_id: number;
  type: FactorType;
  name: string;
  created_at: Timestamp;
  /** Null while a TOTP factor waits for its first code. */
  confirmed_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  totp_secret_sealed: string | null;
  /** The last 30-second step a code was accepted for (bigint: read back as a string). */
  totp_last_step: ColumnType<string | null, number | null | undefined, number | null>;
  credential_id: string | null;
  public_key: string | null;
  sign_count: ColumnType<string | null, number | null | undefined, number | null>;
  transports: string[] | null;
  user_handle: string | null;
}

export type MfaFactorRow = Selectable<MfaFactorTable>;
export type NewMfaFactorRow = Insertable<MfaFactorTable>;

export interface MfaRecoveryCodeTable {
  id: Generated<number>;
  user_id: number;
  code_hash: string;
  created_at: Timestamp;
  used_at: NullableTimestamp;
}

export type ChallengePurpose = 'mfa' | 'passkey_registration' | 'passkey_login';

/** A row issued for one use before it expires: a reset or verification token, a login step, a challenge. */
interface SingleUse {
  created_at: Timestamp;
  expires_at: GivenTimestamp;
  used_at: NullableTimestamp;
}

export interface MfaChallengeTable extends SingleUse {
  id: string;
  purpose: ChallengePurpose;
  user_id: number | null;
  /** SHA-256 of the mfa_token, for purpose `mfa`. */
  token_hash: string | null;
  /** The WebAuthn challenge (base64url) the next assertion or attestation must sign. */
  challenge: string | null;
  /** The WebAuthn user handle a registration's options carried. */
  user_handle: string | null;
  failures: Generated<number>;
  /** How the first step of a login was taken, for purpose `mfa`; null for a password. */
  first_amr: ColumnType<string[] | null, string[] | null | undefined, string[] | null>;
  /** The upstream provider (its slug) whose sign-in this second step finishes; null after a password. */
  provider: ColumnType<string | null, string | null | undefined, string | null>;
  /** The organisation the login named, for purpose `mfa`: the session the second step opens acts for it. */
  organization_id: ColumnType<number | null, number | null | undefined, number | null>;
}

export type MfaChallengeRow = Selectable<MfaChallengeTable>;

export interface ApiKeyTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  /** The key's first characters, shown in lists; not enough of it to use. */
  prefix: string;
  /** SHA-256 (hex) of the whole key: the key itself is never stored. */
  key_hash: string;
  read_only: Generated<boolean>;
  created_at: Timestamp;
  expires_at: GivenTimestamp;
  last_used_at: NullableTimestamp;
}

export type ApiKeyRow = Selectable<ApiKeyTable>;
export type NewApiKeyRow = Insertable<ApiKeyTable>;

export type TokenPurpose = 'password_reset' | 'email_verification';

export interface AccountTokenTable extends SingleUse {
  id: Generated<number>;
  user_id: number;
  purpose: TokenPurpose;
  token_hash: string;
  email: string;
}

export type AccountTokenRow = Selectable<AccountTokenTable>;

/** A sign-in code and link sent by e-mail; both are spent together. */
export interface EmailCodeTable extends SingleUse {
  id: Generated<number>;
  /** The normalized address the mail went to. */
  email: string;
  /** Null for an address without an account, whose code creates one (EMAIL_CODE_SIGNUP). */
  user_id: number | null;
  /** HMAC-SHA-256 (hex) of the six-digit code under a key derived from SECRET_KEY. */
  code_hash: string;
  /** SHA-256 (hex) of the link's token. */
  token_hash: string;
  failures: Generated<number>;
  /**
   * Set for the code that proves a provider's unvouched address: the provider sign-in it completes.
   * Its token is the `verification_token` the application holds, never a link; such a code signs in
   * nothing by itself.
   */
  provider_code_id: ColumnType<number | null, number | null | undefined, number | null>;
}

export type EmailCodeRow = Selectable<EmailCodeTable>;

export interface MailOutboxTable {
  id: Generated<number>;
  recipient: string;
  subject: string;
  /** The encrypted message; null once sent. */
  payload: string | null;
  created_at: Timestamp;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  locked_until: NullableTimestamp;
  sent_at: NullableTimestamp;
  failed_at: NullableTimestamp;
  last_error: string | null;
}

export type OutboxRow = Selectable<MailOutboxTable>;
export type NewOutboxRow = Insertable<MailOutboxTable>;

/** How many users are in each state; kept by a trigger on users. */
export interface UserCountTable {
  state: 'active' | 'inactive' | 'deleted';
  n: ColumnType<number, never, never>;
}

export interface Database {
  users: UserTable;
  sessions: SessionTable;
  account_tokens: AccountTokenTable;
  mail_outbox: MailOutboxTable;
  user_counts: UserCountTable;
  mfa_factors: MfaFactorTable;
  mfa_recovery_codes: MfaRecoveryCodeTable;
  mfa_challenges: MfaChallengeTable;
  api_keys: ApiKeyTable;
  email_codes: EmailCodeTable;
}

/** What a repository runs its queries on: the database or a transaction the service opened. */
export type Executor = Kysely<Database> | Transaction<Database>;
