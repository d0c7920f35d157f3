import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { PaginationConfig, WebhookConfig } from '../config/index.js';
import type { AuditDetails } from '../audit/audit-repository.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import {
  deleteEndpoint,
  findEndpoint,
  insertEndpoint,
  listAttempts,
  listDeliveriesAfter,
  listEndpointsAfter,
  retryDelivery,
  rotateEndpointSecret,
  updateEndpoint,
  type DeliveryStatus,
  type WebhookAttemptRow,
  type WebhookDeliveryRow,
  type WebhookEndpointChanges,
  type WebhookEndpointRow,
} from './webhook-repository.js';
import { NotFound, Validation } from '../errors.js';
import { seal } from '../infra/sealed.js';
import { checkResolvesPublic, RefusedAddress, urlProblem } from '../infra/public-addresses.js';
import { webhookSealingKey } from './delivery.js';
import { recordEvent, type AuditEventType } from '../audit/audit-events.js';
import { requireAdmin, type Principal } from '../principal.js';

/** How long the secret before a rotation keeps signing messages beside the new one. */
export const SECRET_OVERLAP_SECONDS = 24 * 60 * 60;

export interface NewWebhookEndpoint {
  url: string;
  events: string[];
  description?: string | null;
}

export interface WebhookEndpointPatch {
  url?: string;
  events?: string[];
  description?: string | null;
  enabled?: boolean;
}

export interface CursorQuery {
  cursor?: number;
  limit?: number;
}

export interface CursorPage<T> {
  rows: T[];
  meta: { next_cursor: number | null; has_more: boolean };
}

/** A delivery with every attempt made of it, oldest first. */
export type WebhookDeliveryWithAttempts = WebhookDeliveryRow & { attemptLog: WebhookAttemptRow[] };

/**
 * Webhook endpoints as admins manage them: registration (the secret shown once, stored sealed),
 * changes, rotation of the secret, the delivery log and retries. Messages are written by
 * `recordEvent` and sent by the dispatcher in src/webhooks/delivery.ts.
 */
export class WebhookService {
  private readonly key: Buffer;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    private readonly config: WebhookConfig,
    private readonly pagination: PaginationConfig,
    /** SECRET_KEY, from which the key that seals endpoint secrets is derived. */
    secretKey: string,
  ) {
    this.key = webhookSealingKey(secretKey);
  }

  async list(principal: Principal, query: CursorQuery): Promise<CursorPage<WebhookEndpointRow>> {
    requireAdmin(principal);
    const limit = query.limit ?? this.pagination.defaultPageSize;
    return pageOf(await listEndpointsAfter(this.db, query.cursor ?? 0, limit + 1), limit);
  }

  async create(principal: Principal, input: NewWebhookEndpoint): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
    requireAdmin(principal);
    await this.checkUrl(input.url);
    const secret = newSecret();
    const endpoint = await this.transact(async (trx) => {
      const row = await insertEndpoint(trx, {
        url: input.url,
        events: [...new Set(input.events)],
        description: descriptionOf(input.description),
        secret_sealed: seal(this.key, secret),
      });
      // The host only: a URL's path or query may carry a receiver's token, which the trail never holds.
      await recordAdminEvent(trx, principal, 'webhook.created', { webhook_id: row.id, host: new URL(row.url).host, events: row.events });
      return row;
    });
    return { endpoint, secret };
  }

  async get(principal: Principal, id: number): Promise<WebhookEndpointRow> {
    requireAdmin(principal);
    return found(await findEndpoint(this.db, id));
  }

  async update(principal: Principal, id: number, patch: WebhookEndpointPatch): Promise<WebhookEndpointRow> {
    requireAdmin(principal);
    if (patch.url !== undefined) await this.checkUrl(patch.url);
    const changes: WebhookEndpointChanges = {};
    if (patch.url !== undefined) changes.url = patch.url;
    if (patch.events !== undefined) changes.events = [...new Set(patch.events)];
    if (patch.description !== undefined) changes.description = descriptionOf(patch.description);
    if (patch.enabled !== undefined) changes.enabled = patch.enabled;
    return this.transact(async (trx) => {
      const row = found(await updateEndpoint(trx, id, changes));
      await recordAdminEvent(trx, principal, 'webhook.updated', {
        webhook_id: id,
        fields: Object.keys(changes),
        ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
      });
      return row;
    });
  }

  async remove(principal: Principal, id: number): Promise<void> {
    requireAdmin(principal);
    await this.transact(async (trx) => {
      if (!(await deleteEndpoint(trx, id))) throw new NotFound('Webhook not found');
      await recordAdminEvent(trx, principal, 'webhook.deleted', { webhook_id: id });
    });
  }

  /** A new secret, shown this once; the current one keeps signing beside it for a day. */
  async rotateSecret(principal: Principal, id: number): Promise<{ secret: string; previousSecretExpiresAt: Date }> {
    requireAdmin(principal);
    const secret = newSecret();
    const row = await this.transact(async (trx) => {
      const rotated = found(await rotateEndpointSecret(trx, id, seal(this.key, secret), SECRET_OVERLAP_SECONDS));
      await recordAdminEvent(trx, principal, 'webhook.secret_rotated', { webhook_id: id });
      return rotated;
    });
    return { secret, previousSecretExpiresAt: row.previous_secret_expires_at! };
  }

  /** The endpoint's deliveries by id ascending after `cursor`, each with its attempts. */
  async deliveries(
    principal: Principal,
    id: number,
    query: CursorQuery & { status?: DeliveryStatus },
  ): Promise<CursorPage<WebhookDeliveryWithAttempts>> {
    requireAdmin(principal);
    found(await findEndpoint(this.db, id));
    const limit = query.limit ?? this.pagination.defaultPageSize;
    const page = pageOf(await listDeliveriesAfter(this.db, id, { status: query.status }, query.cursor ?? 0, limit + 1), limit);
    return { rows: await this.withAttempts(page.rows), meta: page.meta };
  }

  /** Makes a delivery of the endpoint due now; a finished one gets a new round of attempts. */
  async retry(principal: Principal, endpointId: number, deliveryId: number): Promise<WebhookDeliveryWithAttempts> {
    requireAdmin(principal);
    const delivery = await this.transact(async (trx) => {
      const row = await retryDelivery(trx, endpointId, deliveryId);
      if (!row) throw new NotFound('Delivery not found');
      await recordAdminEvent(trx, principal, 'webhook.delivery_retried', { webhook_id: endpointId, delivery_id: deliveryId });
      // Due now: the dispatcher is woken once this commits.
      trx.queuedWebhooks.push(row.message_id);
      return row;
    });
    const [withLog] = await this.withAttempts([delivery]);
    return withLog;
  }

  /**
   * Refuses (422) a URL that is not https (unless private addresses are allowed), carries
   * credentials, or names or resolves to a non-public address.
   */
  private async checkUrl(url: string): Promise<void> {
    const refuse = (message: string) => new Validation([{ field: 'body.url', message }]);
    // A refusal that the setting would lift says so: a receiver on the same network is a common first test.
    const allowable = (message: string) => refuse(`${message}; WEBHOOK_ALLOW_PRIVATE_URLS=true allows internal addresses and http://`);
    const problem = urlProblem(url, this.config.allowPrivateUrls);
    if (problem !== undefined) throw urlProblem(url, true) === undefined ? allowable(problem) : refuse(problem);
    if (this.config.allowPrivateUrls) return;
    try {
      await checkResolvesPublic(url, this.config.timeoutMs);
    } catch (error) {
      if (error instanceof RefusedAddress) throw error.internal ? allowable(error.message) : refuse(error.message);
      throw error;
    }
  }

  private async withAttempts(rows: WebhookDeliveryRow[]): Promise<WebhookDeliveryWithAttempts[]> {
    const attempts = await listAttempts(
      this.db,
      rows.map((row) => row.id),
    );
    return rows.map((row) => ({ ...row, attemptLog: attempts.filter((attempt) => attempt.delivery_id === row.id) }));
  }
}

/** An admin's change to the webhooks: about no account, so without a subject. */
function recordAdminEvent(trx: UnitOfWork, principal: Principal, type: AuditEventType, details: AuditDetails): Promise<void> {
  return recordEvent(trx, { type, actor: principal.user.id, subject: null, details, origin: principal.client });
}

/** `whsec_` and the base64 of 32 random bytes, as Standard Webhooks libraries take it. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function descriptionOf(value: string | null | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}

function found<T>(row: T | undefined): T {
  if (row === undefined) throw new NotFound('Webhook not found');
  return row;
}

function pageOf<T extends { id: number }>(rows: T[], limit: number): CursorPage<T> {
  const has_more = rows.length > limit;
  const page = has_more ? rows.slice(0, limit) : rows;
  return { rows: page, meta: { next_cursor: has_more ? page[page.length - 1].id : null, has_more } };
}
