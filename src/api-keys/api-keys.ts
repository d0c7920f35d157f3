import type { Kysely } from 'kysely';
import type { ApiKeyConfig } from '../config/index.js';
import { deleteApiKey, findApiKeyHolder, insertApiKey, listApiKeys, lockAndCountApiKeys } from './api-key-repository.js';
import type { Transact } from '../db/transaction.js';
import type { ApiKeyRow, Database } from '../db/types.js';
import { Conflict, NotFound, TokenExpired, Unauthorized, Validation } from '../errors.js';
import type { AccountMail } from '../mail/account-mail.js';
import { isWellFormedApiKey, newApiKey } from './api-key-secrets.js';
import { recordEvent } from '../audit/audit-events.js';
import type { ClientInfo, Principal } from '../principal.js';
import { sha256 } from '../sessions/tokens.js';

/** How long a key lives when its creator does not say, unless API_KEY_MAX_DAYS is shorter. */
const DEFAULT_DAYS = 90;
/** Keys one user may hold, expired ones included: the list has no pages. */
export const MAX_KEYS_PER_USER = 100;

export interface NewApiKeyInput {
  name: string;
  expires_in_days?: number;
  read_only?: boolean;
}

/**
 * API keys: a user's keys for programs that call the API on their behalf. The key is shown once,
 * at creation; the service keeps its SHA-256. Which operations a key may call is the contract's
 * to say (see `requireKeyMay`); a key stops at once when it is deleted, when it expires, and when
 * its user is deleted or disabled (whose keys are then deleted with their sessions). Each new key
 * is mailed to the account, without the key.
 */
export class ApiKeyService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    private readonly config: ApiKeyConfig,
    private readonly mail: AccountMail,
  ) {}

  async create(principal: Principal, input: NewApiKeyInput): Promise<{ row: ApiKeyRow; key: string }> {
    const { user } = principal;
    const days = input.expires_in_days ?? Math.min(DEFAULT_DAYS, this.config.maxDays);
    if (days > this.config.maxDays) {
      throw new Validation([
        {
          field: 'body.expires_in_days',
          message: `must be at most ${this.config.maxDays}: keys of this service live at most that many days`,
        },
      ]);
    }
    const { key, prefix, hash } = newApiKey();
    const row = await this.transact(async (trx) => {
      if ((await lockAndCountApiKeys(trx, user.id)) >= MAX_KEYS_PER_USER) {
        throw new Conflict(`A user may hold at most ${MAX_KEYS_PER_USER} API keys, expired ones included: delete one first`);
      }
      const created = await insertApiKey(trx, {
        userId: user.id,
        name: input.name.trim(),
        prefix,
        keyHash: hash,
        readOnly: input.read_only ?? false,
        expiresInDays: days,
      });
      await recordEvent(trx, {
        type: 'api_key.created',
        actor: user.id,
        subject: user.id,
        details: { api_key_id: created.id, prefix, read_only: created.read_only, expires_in_days: days },
        origin: principal.client,
      });
      await this.mail.sendNewSignInMethodNotice(trx, user, { kind: 'api_key', name: created.name, prefix }, principal.client);
      return created;
    });
    this.mail.flush();
    return { row, key };
  }

  list(principal: Principal): Promise<ApiKeyRow[]> {
    return listApiKeys(this.db, principal.user.id);
  }

  async remove(principal: Principal, id: number): Promise<void> {
    const { user } = principal;
    await this.transact(async (trx) => {
      const removed = await deleteApiKey(trx, user.id, id);
      if (!removed) throw new NotFound('API key not found');
      await recordEvent(trx, {
        type: 'api_key.deleted',
        actor: user.id,
        subject: user.id,
        details: { api_key_id: id, prefix: removed.prefix },
        origin: principal.client,
      });
    });
  }

  /**
   * The principal behind a key, or the 401 that says why there is none. A key whose checksum does
   * not match is refused before any query: it was mistyped, truncated or made up.
   */
  async authenticate(key: string, client: ClientInfo): Promise<Principal> {
    if (!isWellFormedApiKey(key)) throw new Unauthorized();
    const holder = await findApiKeyHolder(this.db, sha256(key));
    if (!holder) throw new Unauthorized();
    const { api_key_id: id, api_key_read_only: readOnly, api_key_expired: expired, ...user } = holder;
    if (expired) throw new TokenExpired();
    return { user, apiKey: { id, readOnly }, client };
  }
}
