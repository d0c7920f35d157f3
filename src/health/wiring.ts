import type { Core } from '../wiring/core.js';
import { HealthService } from './health.js';

/** Health and readiness, and what this process reports of itself. */
export function healthRoom(core: Pick<Core, 'config' | 'db' | 'lifecycle'>) {
  return {
    health: new HealthService(core.db, core.lifecycle),
    about: { version: core.config.server.appVersion, startedAt: Date.now() },
  };
}
