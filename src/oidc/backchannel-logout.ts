import type { Kysely } from 'kysely';
import type { WebhookConfig } from '../config/index.js';
import type { UnitOfWork } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import { DrainLoop } from '../infra/drain-loop.js';
import { postOnce } from '../infra/outbound-post.js';
import { urlProblem } from '../infra/public-addresses.js';
import type { Logger } from '../logger.js';
import {
  claimDueLogouts,
  pruneFinishedLogouts,
  queueLogout,
  queueSessionLogouts,
  recordLogoutAttempt,
  releaseLogouts,
  removeClientFromSessions,
  type ClaimedLogout,
  type EndedSessions,
  type SessionLogout,
} from './backchannel-logout-repository.js';
import type { Provider } from './library.js';

/** The event a logout token carries (OpenID Connect Back-Channel Logout 1.0, section 2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

const BATCH = 10;
const MAX_BACKOFF_MS = 60 * 60 * 1000;
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const PRUNE_BATCH = 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** A signed logout token for a queued logout, and where it goes; undefined when the client no longer takes one. */
export type LogoutSigner = (logout: ClaimedLogout) => Promise<{ uri: string; token: string } | undefined>;

/**
 * Queues, in the caller's unit of work, a logout token for each client with a back-channel logout URI
 * in the provider sessions `ended` names (see `queueSessionLogouts`); sent once it commits.
 */
export async function queueBackchannelLogouts(trx: UnitOfWork, ended: EndedSessions): Promise<void> {
  trx.queuedLogouts.push(...(await queueSessionLogouts(trx, ended)));
}

/**
 * A revoked grant ends its client's part of the person's provider sessions: a logout token for each,
 * and the client is taken out of them. Call before the grant's records go.
 */
export async function endGrantInSessions(trx: UnitOfWork, userId: number, clientId: string, grantId: string): Promise<void> {
  await queueBackchannelLogouts(trx, { userId, clientId, grantId });
  await removeClientFromSessions(trx, userId, clientId, grantId);
}

/**
 * Delivers logout tokens (OpenID Connect Back-Channel Logout 1.0) as the webhook dispatcher delivers
 * messages: each is queued in the transaction that ends the session, and this loop POSTs what is due
 * (`logout_token`, form-encoded), retrying failures with exponential backoff under the webhook
 * settings (WEBHOOK_TIMEOUT_MS, WEBHOOK_RETRY_BASE_MS, WEBHOOK_MAX_ATTEMPTS) until a 2xx. No request
 * waits for a delivery. Rows are claimed with SKIP LOCKED and a lease, so several processes never send
 * one at the same time and a restart loses nothing. The token is signed by the provider, at each
 * attempt (a logout token lives two minutes), with the same `jti`.
 */
export class BackchannelLogoutDispatcher {
  private readonly leaseMs: number;
  private readonly loop: DrainLoop;
  private signer: LogoutSigner | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: WebhookConfig,
    /** PROVIDER_ALLOW_PRIVATE_URLS: whether clients' URIs may be http and internal. */
    private readonly allowPrivateUrls: boolean,
    private readonly logger: Logger,
  ) {
    this.leaseMs = config.timeoutMs + 60_000;
    this.loop = new DrainLoop(
      () => this.drain(),
      config.pollIntervalMs,
      (error) => this.logger.warn({ err: error }, 'back-channel logout: could not read the queue'),
    );
  }

  /** The provider's signing of logout tokens; without it (no OpenID Connect provider) nothing is sent. */
  signWith(signer: LogoutSigner): void {
    this.signer = signer;
  }

  /** Queues the logout of one client of a provider session, outside any unit of work (the provider's own logout), and sends it. */
  async queue(logout: SessionLogout): Promise<void> {
    if ((await queueLogout(this.db, logout)) !== undefined) this.wake();
  }

  start(): void {
    if (!this.loop.stopped || this.signer === undefined) return;
    this.loop.start();
    const prune = () => {
      this.pruneTimer = setTimeout(() => {
        void this.prune().finally(() => {
          if (!this.loop.stopped) prune();
        });
      }, PRUNE_INTERVAL_MS);
      this.pruneTimer.unref();
    };
    prune();
  }

  /** Sends what is due now (after a commit that queued logouts). */
  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    clearTimeout(this.pruneTimer);
    await this.loop.stop();
  }

  /** Deletes logouts finished more than WEBHOOK_RETENTION_DAYS ago; a failure is logged and retried at the next pass. */
  private async prune(): Promise<void> {
    const before = new Date(Date.now() - this.config.retentionDays * DAY_MS);
    try {
      while ((await pruneFinishedLogouts(this.db, before, PRUNE_BATCH)) === PRUNE_BATCH && !this.loop.stopped);
    } catch (error) {
      this.logger.warn({ err: error }, 'back-channel logout: could not prune finished deliveries');
    }
  }

  private async drain(): Promise<void> {
    for (;;) {
      const batch = await claimDueLogouts(this.db, BATCH, this.leaseMs);
      if (this.loop.stopped) {
        await releaseLogouts(
          this.db,
          batch.map((row) => row.id),
        );
        return;
      }
      // A dead receiver must not hold up the others: the batch's attempts run side by side.
      await Promise.all(batch.map((row) => this.attempt(row)));
      if (batch.length < BATCH || this.loop.stopped) return;
    }
  }

  private async attempt(row: ClaimedLogout): Promise<void> {
    const answer = await this.send(row);
    const delivered = answer.statusCode !== null && answer.statusCode >= 200 && answer.statusCode < 300;
    const retryInMs =
      delivered || answer.final || row.attempts >= this.config.maxAttempts
        ? null
        : Math.min(this.config.retryBaseMs * 2 ** (row.attempts - 1), MAX_BACKOFF_MS);
    await recordLogoutAttempt(this.db, { id: row.id, statusCode: answer.statusCode, error: answer.error, delivered, retryInMs });
    const about = { logoutId: row.id, clientId: row.client_id, attempts: row.attempts };
    if (delivered) this.logger.debug(about, 'back-channel logout: delivered');
    else
      this.logger.warn(
        { ...about, retryInMs, statusCode: answer.statusCode, err: answer.error },
        retryInMs === null ? 'back-channel logout: delivery failed, given up' : 'back-channel logout: delivery failed',
      );
  }

  /** One attempt; `final` when there is nothing to retry (the client no longer takes logout tokens). */
  private async send(row: ClaimedLogout): Promise<{ statusCode: number | null; error: string | null; final?: boolean }> {
    let signed: Awaited<ReturnType<LogoutSigner>>;
    try {
      signed = await this.signer!(row);
    } catch (error) {
      return { statusCode: null, error: `the logout token could not be made: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (signed === undefined) return { statusCode: null, error: 'the client has no backchannel_logout_uri any more', final: true };
    const problem = urlProblem(signed.uri, this.allowPrivateUrls);
    if (problem !== undefined) return { statusCode: null, error: `refused: the URI ${problem}`, final: true };
    const headers = { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'account-service-backchannel-logout' };
    const body = new URLSearchParams({ logout_token: signed.token }).toString();
    return postOnce(signed.uri, headers, body, { timeoutMs: this.config.timeoutMs, allowPrivateUrls: this.allowPrivateUrls });
  }
}

/** What the service uses of the library's ID token model to make a logout token. */
interface LogoutTokenModel {
  mask: Record<string, null>;
  set(claim: string, value: unknown): void;
  issue(options: { use: 'logout' }): Promise<string>;
}

interface LogoutClient {
  clientId: string;
  backchannelLogoutUri?: string;
}

/**
 * Signs logout tokens with the provider, as its own back-channel logout does: `typ: logout+jwt`, the
 * provider's key and the client's ID token algorithm (so the token verifies against the JWK Set),
 * `iss`, `aud` the client, `iat`, `exp` two minutes on, `jti`, `events`, `sub` (pairwise for a client
 * that asks) and `sid`, which is sent whether or not the client requires it; never a `nonce`.
 */
export function providerLogoutSigner(instance: () => Promise<Provider>): LogoutSigner {
  return async (logout) => {
    const { Client, IdToken } = (await instance()) as unknown as {
      Client: { find(id: string): Promise<LogoutClient | undefined> };
      IdToken: new (claims: { sub: string }, options: { client: LogoutClient; ctx: undefined }) => LogoutTokenModel;
    };
    const client = await Client.find(logout.client_id);
    if (!client?.backchannelLogoutUri) return undefined;
    const token = new IdToken({ sub: logout.account_id }, { client, ctx: undefined });
    token.mask = { sub: null };
    token.set('events', { [BACKCHANNEL_LOGOUT_EVENT]: {} });
    token.set('jti', logout.jti);
    token.set('sid', logout.sid);
    return { uri: client.backchannelLogoutUri, token: await token.issue({ use: 'logout' }) };
  };
}

/**
 * The library's back-channel logout (`Client#backchannelLogout`, which it calls when a person logs
 * out at a client's request, and which would POST there and then, the person's browser waiting) queues
 * the logout instead, for the dispatcher to deliver.
 */
export function queueProviderLogouts(provider: Provider, dispatcher: BackchannelLogoutDispatcher): void {
  Object.defineProperty(provider.Client.prototype, 'backchannelLogout', {
    async value(this: { clientId: string }, accountId: string | undefined, sid: string | undefined) {
      if (accountId && sid) await dispatcher.queue({ clientId: this.clientId, sid, accountId });
    },
  });
}
