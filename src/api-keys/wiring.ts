import type { Core } from '../wiring/core.js';
import { ApiKeyService } from './api-keys.js';

/** API keys that act for their user. */
export function apiKeysRoom(core: Pick<Core, 'config' | 'db' | 'transact' | 'mail'>) {
  return { apiKeys: new ApiKeyService(core.db, core.transact, core.config.apiKeys, core.mail) };
}
