import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { requireAdmin, type Principal } from '../principal.js';
import {
  countEventsSince,
  countUsersByState,
  mailBacklog,
  webhookBacklog,
  type BacklogCounts,
  type UserCounts,
} from './overview-repository.js';

/** The window the overview's sign-ins and given-up messages are counted over. */
const WINDOW_MS = 24 * 60 * 60 * 1000;

export interface Overview {
  generatedAt: Date;
  users: UserCounts;
  signIns: { since: Date; succeeded: number; failed: number };
  health: { draining: boolean; version: string; uptimeSeconds: number };
  mail: BacklogCounts;
  webhooks: BacklogCounts;
}

/** The deployment at a glance, for admins: users, the last day's sign-ins, this process, and what waits to be sent. */
export class AdminOverview {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly about: { version: string; startedAt: number },
    private readonly lifecycle: { readonly draining: boolean },
    private readonly now: () => number = Date.now,
  ) {}

  async read(principal: Principal): Promise<Overview> {
    requireAdmin(principal);
    const generatedAt = new Date(this.now());
    const since = new Date(generatedAt.getTime() - WINDOW_MS);
    const [users, events, mail, webhooks] = await Promise.all([
      countUsersByState(this.db),
      countEventsSince(this.db, ['login.succeeded', 'login.failed'], since),
      mailBacklog(this.db, since),
      webhookBacklog(this.db, since),
    ]);
    return {
      generatedAt,
      users,
      signIns: { since, succeeded: events.get('login.succeeded') ?? 0, failed: events.get('login.failed') ?? 0 },
      health: {
        draining: this.lifecycle.draining,
        version: this.about.version,
        uptimeSeconds: Math.floor((generatedAt.getTime() - this.about.startedAt) / 1000),
      },
      mail,
      webhooks,
    };
  }
}
