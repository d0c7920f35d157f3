import type { Core } from '../wiring/core.js';
import { AdminOverview } from './overview.js';

/** The deployment at a glance for admins; it reads what the other capabilities write and writes nothing. */
export function adminOverviewRoom(core: Pick<Core, 'db' | 'lifecycle'>, needs: { about: { version: string; startedAt: number } }) {
  return { overview: new AdminOverview(core.db, needs.about, core.lifecycle) };
}
