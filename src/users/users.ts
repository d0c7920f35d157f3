import type { Kysely } from 'kysely';
import type { PaginationConfig } from '../config/index.js';
import { Conflict, Forbidden, NotFound, Validation } from '../errors.js';
import { isUniqueViolation } from '../db/errors.js';
import { deleteUserApiKeys } from '../api-keys/api-key-repository.js';
import { endUserOidcRecords } from '../oidc/record-repository.js';
import { queueBackchannelLogouts } from '../oidc/backchannel-logout.js';
import { listLiveSessions, revokeUserSessions } from '../sessions/session-repository.js';
import type { Transact } from '../db/transaction.js';
import type { Database, Executor, UserRow, UserUpdate } from '../db/types.js';
import type { AuditDetails } from '../audit/audit-repository.js';
import * as users from './user-repository.js';
import type { ListedUser } from './user-repository.js';
import { normalizeEmail } from '../email-address.js';
import type { AccountMail } from '../mail/account-mail.js';
import { recordEvent } from '../audit/audit-events.js';
import type { BreachedPasswords } from '../passwords/breached-passwords.js';
import type { CurrentPassword } from '../passwords/current-password.js';
import { checkNewPassword, checkNotEmail, userCaller, type PasswordHasher } from '../passwords/passwords.js';
import { isAdmin, requireAdmin, requireSelfOrAdmin, type Principal } from '../principal.js';

const SORT_FIELDS: readonly users.SortField[] = ['id', 'email', 'name', 'created_at', 'updated_at'];

export interface ListInput {
  page?: number;
  per_page?: number;
  cursor?: number;
  limit?: number;
  sort?: string;
  order?: string;
  status?: users.UserStatus;
  q?: string;
}

export type UserList =
  | {
      shape: 'page';
      rows: ListedUser[];
      meta: { page: number; per_page: number; total: number; pages: number; has_next: boolean; has_prev: boolean };
    }
  | { shape: 'cursor'; rows: ListedUser[]; meta: { next_cursor: number | null; has_more: boolean } };

export interface UserFields {
  name?: string;
  email?: string;
  password?: string;
  role?: 'user' | 'admin';
  is_active?: boolean;
}

/** A user named by id or by normalized e-mail. */
export type UserRef = { id: number } | { email: string };

export interface UserUpdateInput extends UserFields {
  /** Proof for a user changing their own e-mail or password. */
  current_password?: string;
}

export class UserService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly pagination: PaginationConfig,
    private readonly mail: AccountMail,
    private readonly passwords: PasswordHasher,
    private readonly transact: Transact,
    private readonly currentPassword: CurrentPassword,
    /** Refuses passwords known from breaches; absent unless PWNED_PASSWORDS_CHECK. */
    private readonly breached?: BreachedPasswords,
  ) {}

  async list(principal: Principal, input: ListInput): Promise<UserList> {
    requireAdmin(principal);
    const filter = { status: input.status, q: input.q };
    const pageShape = input.page !== undefined || input.per_page !== undefined;
    const cursorShape = input.cursor !== undefined || input.limit !== undefined;
    if (pageShape && cursorShape) {
      const mixed = (['page', 'per_page', 'cursor', 'limit'] as const)
        .filter((name) => input[name] !== undefined)
        .map((name) => ({ field: `query.${name}`, message: 'page/per_page and cursor/limit cannot be combined' }));
      throw new Validation(mixed);
    }
    if (cursorShape) {
      const limit = input.limit ?? this.pagination.defaultPageSize;
      const rows = await users.listUsersAfter(this.db, filter, input.cursor ?? 0, limit + 1);
      const has_more = rows.length > limit;
      const page = has_more ? rows.slice(0, limit) : rows;
      return { shape: 'cursor', rows: page, meta: { next_cursor: has_more ? page[page.length - 1].id : null, has_more } };
    }
    const page = input.page ?? 1;
    const perPage = input.per_page ?? this.pagination.defaultPageSize;
    const sort = SORT_FIELDS.find((field) => field === input.sort) ?? 'created_at';
    const { rows, total } = await users.listUsersPage(this.db, {
      ...filter,
      sort,
      descending: (input.order ?? 'desc') === 'desc',
      limit: perPage,
      offset: (page - 1) * perPage,
    });
    const pages = Math.ceil(total / perPage);
    return {
      shape: 'page',
      rows,
      meta: { page, per_page: perPage, total, pages, has_next: page < pages, has_prev: page > 1 },
    };
  }

  async get(principal: Principal, id: number): Promise<UserRow> {
    requireSelfOrAdmin(principal, id);
    return this.live(await users.findUserById(this.db, id));
  }

  async create(principal: Principal, input: Required<Pick<UserFields, 'name' | 'email' | 'password'>> & UserFields): Promise<UserRow> {
    requireAdmin(principal);
    checkNewPassword(input.password, 'body.password', input.email);
    await this.breached?.refuse(input.password, 'body.password');
    const passwordHash = await this.passwords.hash(input.password, userCaller(principal.user.id));
    return this.transact(async (trx) => {
      const created = await users.insertUser(trx, {
        name: input.name.trim(),
        email: normalizeEmail(input.email),
        password_hash: passwordHash,
        role: input.role ?? 'user',
        is_active: input.is_active ?? true,
      });
      if (!created) throw new Conflict('Email already registered');
      await recordEvent(trx, {
        type: 'user.created',
        actor: principal.user.id,
        subject: created.id,
        details: { role: created.role, is_active: created.is_active },
        origin: principal.client,
      });
      return created;
    });
  }

  /**
   * A user's own new e-mail stays pending until the link sent to it is followed, and their own
   * e-mail or password changes only with their current password. An admin's change to another
   * user applies at once.
   */
  async update(principal: Principal, id: number, input: UserUpdateInput): Promise<UserRow> {
    requireSelfOrAdmin(principal, id);
    if (!isAdmin(principal) && (input.role !== undefined || input.is_active !== undefined)) {
      throw new Forbidden('Only an admin may change role or is_active');
    }
    const self = principal.user.id === id;
    const credentials = input.email !== undefined || input.password !== undefined;
    if (self && credentials && input.current_password === undefined) {
      throw new Validation([{ field: 'body.current_password', message: 'is required to change your own email or password' }]);
    }
    checkNewPassword(input.password, 'body.password', input.email);
    const current = this.live(await users.findUserById(this.db, id));
    if (input.email === undefined) checkNotEmail(input.password, current.email, 'body.password');
    if (self && credentials) await this.currentPassword.confirm(current, input.current_password ?? '', principal.client);

    const patch: UserUpdate = {};
    if (input.name !== undefined) patch.name = input.name.trim();
    if (input.email !== undefined) {
      const email = normalizeEmail(input.email);
      if (self) {
        // Your own current address again withdraws a pending change.
        if (email !== current.email) patch.pending_email = email;
        else if (current.pending_email !== null) patch.pending_email = null;
      } else if (email !== current.email) {
        patch.email = email;
        patch.email_verified = false;
        patch.pending_email = null;
      }
    }
    if (input.password !== undefined) {
      await this.breached?.refuse(input.password, 'body.password');
      patch.password_hash = await this.passwords.hash(input.password, userCaller(principal.user.id));
    }
    if (input.role !== undefined) patch.role = input.role;
    if (input.is_active !== undefined) patch.is_active = input.is_active;
    const pendingEmail = patch.pending_email;

    let updated: UserRow;
    try {
      updated = await this.transact(async (trx) => {
        if ((patch.role !== undefined && patch.role !== 'admin') || patch.is_active === false) await keepAnAdmin(trx, id);
        if (typeof pendingEmail === 'string') {
          const holder = await users.findUserByEmail(trx, pendingEmail);
          if (holder && holder.id !== id) throw new Conflict('Email already registered');
        }
        const user = this.live(await users.updateLiveUser(trx, id, patch));
        if (patch.password_hash !== undefined) {
          await revokeUserSessions(trx, id, self ? principal.sessionId : undefined);
          await queueBackchannelLogouts(trx, { userId: id });
          await endUserOidcRecords(trx, id);
          await this.mail.sendPasswordChangedNotice(trx, user, self ? 'changed' : 'set_by_admin');
        }
        // A disabled user's sessions and API keys end for good: enabling the user again brings none back.
        if (patch.is_active === false) {
          await revokeUserSessions(trx, id);
          await queueBackchannelLogouts(trx, { userId: id });
          await endUserOidcRecords(trx, id);
          await deleteUserApiKeys(trx, id);
        }
        if (patch.email !== undefined) {
          await this.mail.sendVerification(trx, user);
          await this.mail.sendEmailChangedNotice(trx, user, current.email);
        }
        if (typeof pendingEmail === 'string') await this.mail.sendEmailChange(trx, user, pendingEmail);
        else if (pendingEmail === null) await this.mail.cancelEmailChange(trx, user);
        await recordEvent(trx, {
          type: 'user.updated',
          actor: principal.user.id,
          subject: id,
          details: changes(patch),
          origin: principal.client,
        });
        return user;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new Conflict('Email already registered');
      throw error;
    }
    this.mail.flush();
    return updated;
  }

  async delete(principal: Principal, id: number): Promise<void> {
    requireSelfOrAdmin(principal, id);
    await this.transact(async (trx) => {
      await keepAnAdmin(trx, id);
      // softDeleteUser only touches a live user and returns it already deleted: undefined means unknown or deleted.
      if (!(await users.softDeleteUser(trx, id))) throw new NotFound('User not found');
      await revokeUserSessions(trx, id);
      await queueBackchannelLogouts(trx, { userId: id });
      await endUserOidcRecords(trx, id);
      await deleteUserApiKeys(trx, id);
      await recordEvent(trx, { type: 'user.deleted', actor: principal.user.id, subject: id, origin: principal.client });
    });
  }

  async restore(principal: Principal, id: number): Promise<UserRow> {
    requireAdmin(principal);
    const restored = await this.transact(async (trx) => {
      const user = await users.restoreUser(trx, id);
      if (user) await recordEvent(trx, { type: 'user.restored', actor: principal.user.id, subject: id, origin: principal.client });
      return user;
    });
    if (restored) return restored;
    if (await users.findUserById(this.db, id)) throw new Conflict('User is not deleted');
    throw new NotFound('User not found');
  }

  /** Creates the configured admin if no user has its e-mail; an existing account is left as it is. */
  async ensureAdmin(email: string, password: string): Promise<UserRow | undefined> {
    const normalized = normalizeEmail(email);
    if (await users.findUserByEmail(this.db, normalized)) return undefined;
    return this.createAdmin({ email: normalized, name: 'Administrator', password, source: 'ADMIN_EMAIL' });
  }

  // An operator's actions: no request and no principal behind them; `source` says who asked.

  /** The account with this id or (normalized) e-mail, deleted or not. */
  find(ref: UserRef): Promise<UserRow | undefined> {
    return 'id' in ref ? users.findUserById(this.db, ref.id) : users.findUserByEmail(this.db, ref.email);
  }

  /** Creates a verified admin account; undefined when the e-mail (normalized already) is taken. */
  async createAdmin(admin: { email: string; name: string; password: string; source: string }): Promise<UserRow | undefined> {
    const passwordHash = await this.passwords.hash(admin.password);
    return insertAdmin(this.transact, { email: admin.email, name: admin.name, passwordHash, source: admin.source });
  }

  /**
   * Signs a user out of every session, recorded like any revocation (`session.revoked`, with `all`
   * and `source`); returns how many sessions were still live.
   */
  revokeAllSessions(id: number, source: string): Promise<number> {
    return this.transact(async (trx) => {
      const live = await listLiveSessions(trx, id);
      await revokeUserSessions(trx, id);
      await queueBackchannelLogouts(trx, { userId: id });
      await endUserOidcRecords(trx, id);
      await recordEvent(trx, {
        type: 'session.revoked',
        actor: null,
        subject: id,
        details: { all: true, sessions: live.length, source },
        origin: null,
      });
      return live.length;
    });
  }

  private live(user: UserRow | undefined): UserRow {
    if (!user || user.deleted_at !== null) throw new NotFound('User not found');
    return user;
  }
}

/**
 * Inserts a verified admin account, with no request behind it, and records who asked (`source`: the
 * ADMIN_EMAIL setting, or the CLI); undefined when the e-mail (normalized already) is taken.
 */
function insertAdmin(
  transact: Transact,
  admin: { email: string; name: string; passwordHash: string; source: string },
): Promise<UserRow | undefined> {
  return transact(async (trx) => {
    const created = await users.insertUser(trx, {
      email: admin.email,
      name: admin.name,
      password_hash: admin.passwordHash,
      role: 'admin',
      email_verified: true,
    });
    if (created)
      await recordEvent(trx, {
        type: 'user.created',
        actor: null,
        subject: created.id,
        details: { role: 'admin', is_active: true, source: admin.source },
        origin: null,
      });
    return created;
  });
}

/**
 * Refuses (409) a change that would leave no live, active admin once `id` stops being one. The
 * rows of every such admin stay locked until the transaction ends, so that two admins demoting,
 * disabling or deleting each other at once cannot both pass the check.
 */
async function keepAnAdmin(trx: Executor, id: number): Promise<void> {
  const admins = await users.lockActiveAdmins(trx);
  if (admins.length === 1 && admins[0] === id) throw new Conflict('The last admin cannot be demoted, disabled or deleted');
}

/** The fields an update can set, by the names the contract gives them; a pending address is the e-mail asked for. */
const FIELD_NAMES: Partial<Record<keyof UserUpdate, string>> = {
  name: 'name',
  email: 'email',
  pending_email: 'email',
  password_hash: 'password',
  role: 'role',
  is_active: 'is_active',
};

/**
 * What an update set, for the audit trail: the fields by name, and the new role and state;
 * `email_pending` when the new address waits for its link to be followed.
 */
function changes(patch: UserUpdate): AuditDetails {
  const fields = [...new Set(Object.keys(patch).flatMap((key) => FIELD_NAMES[key as keyof UserUpdate] ?? []))];
  return {
    fields,
    ...(typeof patch.pending_email === 'string' ? { email_pending: true } : {}),
    ...(patch.role !== undefined ? { role: patch.role } : {}),
    ...(patch.is_active !== undefined ? { is_active: patch.is_active } : {}),
  };
}
