import type { Core } from '../wiring/core.js';
import { WebhookService } from './webhooks.js';

/** The admins' webhooks; their delivery runs in the core, since every unit of work may queue a message. */
export function webhooksRoom(core: Pick<Core, 'config' | 'db' | 'transact'>) {
  const { config, db, transact } = core;
  return { webhooks: new WebhookService(db, transact, config.webhooks, config.pagination, config.secret.key) };
}
