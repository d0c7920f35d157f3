import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction, Updateable } from 'kysely';

/** A timestamptz the database fills in by default. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export interface UserTable {
  id: Generated<number>;
  email: string;
  name: string;
  password_hash: string;
  role: 'user' | 'admin';
  is_active: Generated<boolean>;
  email_verified: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface SessionTable {
  id: string;
  user_id: number;
  refresh_token_hash: string;
  previous_token_hash: string | null;
  grace_token_hash: string | null;
  rotated_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  ip: string | null;
  user_agent: string | null;
  created_at: Timestamp;
  last_used_at: Timestamp;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface Database {
  users: UserTable;
  sessions: SessionTable;
}

export type UserRow = Selectable<UserTable>;
export type NewUserRow = Insertable<UserTable>;
export type UserUpdate = Updateable<UserTable>;
export type SessionRow = Selectable<SessionTable>;
export type NewSessionRow = Insertable<SessionTable>;

/** What a repository runs its queries on: the database or a transaction the service opened. */
export type Executor = Kysely<Database> | Transaction<Database>;
