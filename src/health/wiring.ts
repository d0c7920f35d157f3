import type { Core } from '../wiring/core';
import { HealthService } from './health';

/** Health and readiness, and what this process reports of itself. */
export function healthRoom(core: Pick<Core, 'config' | 'db' | 'lifecycle'>) {
  return {
    health: new HealthService(core.db, core.lifecycle),
    about: { version: core.config.server.appVersion, startedAt: Date.now() },
  };
}
