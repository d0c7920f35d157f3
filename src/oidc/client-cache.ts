import { createRequire } from 'node:module';
import type { Client } from 'pg';
import type { Executor } from '../db/types.js';
import type { Logger } from '../logger.js';
import { findOauthClient, type OauthClientRow } from './client-repository.js';

const require = createRequire(import.meta.url);

/** The channel a change to `oauth_clients` is announced on, with the client's id (see its migration). */
export const CLIENT_CHANGES_CHANNEL = 'oauth_clients';

/** How many clients a process keeps; the least recently read is dropped past this. */
const MAX_CLIENTS = 10_000;
/**
 * How long a client is kept at most, announcements or not: a change made where no announcement is
 * sent (triggers turned off for a restore, `session_replication_role = replica`) or not delivered
 * (a listener behind a pool in transaction mode) still reaches every process within this.
 */
const MAX_AGE_MS = 5_000;
/** How long the listener waits before it connects again after losing its connection, doubling up to the last. */
const RECONNECT_DELAYS_MS = [100, 500, 1000, 2000, 5000];

/**
 * The OAuth clients this process has read, kept in memory: every request to the provider names its
 * client, and reading the same row on each of them was one round trip of a few per request.
 *
 * A change reaches every process at once. A trigger on `oauth_clients` announces each change with
 * NOTIFY when its transaction commits, and each process on PostgreSQL listens on a connection of its
 * own and forgets that client; a change this process makes is forgotten here as well, as soon as it is
 * committed, so the answer that reports it is never followed by a stale read. While the listener is not
 * connected (before it first is, and after it loses its connection until it has listened again) no
 * announcement can be heard, so nothing is kept: every read goes to the database, and the cache is
 * emptied again when listening resumes. On the embedded database one process holds the data, so
 * its own changes are all there are.
 *
 * A client is kept for a few seconds at most (MAX_AGE_MS), so that even a change nobody announced
 * reaches every process soon; under load that is still one read of a client every few seconds
 * instead of one or more per request.
 *
 * Only clients that exist are kept: an unknown id costs a read each time, and nobody can fill the
 * memory with made-up ids.
 */
export class OauthClientCache {
  private readonly rows = new Map<string, { read: Promise<OauthClientRow | undefined>; at: number }>();
  /** Bumped by every change heard: a read that began before it is not kept. */
  private generation = 0;
  private listening: boolean;
  private listener: Client | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;

  constructor(
    private readonly db: Executor,
    /** The PostgreSQL server to listen to; absent on the embedded database. */
    private readonly listenTo: { url: string; logger: Logger } | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.listening = listenTo === undefined;
  }

  /** The client's row, from memory when it is known to be current. */
  find(clientId: string): Promise<OauthClientRow | undefined> {
    if (!this.listening) return findOauthClient(this.db, clientId);
    const now = this.now();
    const kept = this.rows.get(clientId);
    if (kept && now - kept.at < MAX_AGE_MS) {
      // Read again now: it becomes the most recently used.
      this.rows.delete(clientId);
      this.rows.set(clientId, kept);
      return kept.read;
    }
    const generation = this.generation;
    const entry = { read: findOauthClient(this.db, clientId), at: now };
    const unkeep = () => {
      if (this.rows.get(clientId) === entry) this.rows.delete(clientId);
    };
    entry.read.then((row) => {
      if (row === undefined || generation !== this.generation) unkeep();
    }, unkeep);
    this.rows.delete(clientId);
    this.rows.set(clientId, entry);
    if (this.rows.size > MAX_CLIENTS) this.rows.delete(this.rows.keys().next().value!);
    return entry.read;
  }

  /** Forgets one client, after a change to it has committed. */
  forget(clientId: string): void {
    this.generation += 1;
    this.rows.delete(clientId);
  }

  private forgetAll(): void {
    this.generation += 1;
    this.rows.clear();
  }

  /** Begins listening for changes made by other processes (PostgreSQL only). */
  async start(): Promise<void> {
    if (!this.listenTo || this.stopped) return;
    const { url, logger } = this.listenTo;
    // pg is loaded only where there is a PostgreSQL server, as the database's pool is.
    const { Client: PgClient } = require('pg') as typeof import('pg');
    const client = new PgClient({ connectionString: url });
    this.listener = client;
    const lost = (error?: Error) => {
      if (this.listener !== client) return;
      this.listener = undefined;
      this.listening = false;
      this.forgetAll();
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.stopped) return;
      const delay = RECONNECT_DELAYS_MS[Math.min(this.failures, RECONNECT_DELAYS_MS.length - 1)];
      this.failures += 1;
      if (error)
        logger.warn(
          { err: error.message, retryInMs: delay },
          'lost the connection that hears OAuth client changes; reading clients from the database meanwhile',
        );
      this.reconnect = setTimeout(() => void this.start(), delay);
      this.reconnect.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('connection ended')));
    client.on('notification', (message) => {
      if (message.channel === CLIENT_CHANGES_CHANNEL && message.payload) this.forget(message.payload);
    });
    try {
      await client.connect();
      await client.query(`listen ${CLIENT_CHANGES_CHANNEL}`);
    } catch (error) {
      lost(error as Error);
      return;
    }
    if (this.listener !== client) return;
    // Whatever changed while nobody listened is read afresh.
    this.forgetAll();
    this.failures = 0;
    this.listening = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnect);
    const client = this.listener;
    this.listener = undefined;
    this.listening = false;
    this.forgetAll();
    await client?.end().catch(() => undefined);
  }
}
