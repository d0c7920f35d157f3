import type { Kysely } from 'kysely';
import { pingDatabase } from './health-repository.js';
import type { Database } from '../db/types.js';
import { Unavailable } from '../errors.js';

/** How long readiness waits for the database. */
const READY_TIMEOUT_MS = 1000;

/** Whether this process should get traffic: it is not stopping, and its database answers in time. */
export class HealthService {
  constructor(
    private readonly db: Kysely<Database>,
    /** `draining` once the process has begun to stop. */
    private readonly lifecycle: { readonly draining: boolean },
  ) {}

  /** Resolves when ready; throws Unavailable with the reason otherwise. */
  async checkReady(): Promise<void> {
    // A stopping process leaves the load balancer's rotation before it stops accepting connections.
    if (this.lifecycle.draining) throw new Unavailable({ cause: new Error('shutting down') });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`database did not answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
    });
    try {
      await Promise.race([pingDatabase(this.db), timeout]);
    } catch (error) {
      throw new Unavailable({ cause: error });
    } finally {
      clearTimeout(timer);
    }
  }
}
