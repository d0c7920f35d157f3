import type { Core } from '../wiring/core';
import { ApiKeyService } from './api-keys';

/** API keys that act for their user. */
export function apiKeysRoom(core: Pick<Core, 'config' | 'db' | 'transact' | 'mail'>) {
  return { apiKeys: new ApiKeyService(core.db, core.transact, core.config.apiKeys, core.mail) };
}
