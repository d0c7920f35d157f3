import { sql } from 'kysely';
import { serviceUnavailable } from '../http/errors';
import { ok } from '../http/reply';
import type { Handler, Services } from './types';

/** How long readiness waits for the database. */
const READY_TIMEOUT_MS = 1000;

const summary = ({ config, startedAt }: Services) =>
  ok({ status: 'ok', version: config.server.appVersion, uptime_seconds: Math.floor((Date.now() - startedAt) / 1000) } as const);

export const healthCheck: Handler<'healthCheck'> = async (_input, services) => summary(services);

/** `GET /health`, for probes set up without the trailing slash. */
export const healthCheckAlias: Handler<'healthCheckAlias'> = async (_input, services) => summary(services);

export const healthLive: Handler<'healthLive'> = async () => ok({ status: 'alive' });

export const healthReady: Handler<'healthReady'> = async (_input, { db, lifecycle }) => {
  // A stopping process leaves the load balancer's rotation before it stops accepting connections.
  if (lifecycle.draining) throw serviceUnavailable(new Error('shutting down'));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`database did not answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
  });
  try {
    await Promise.race([sql`select 1`.execute(db), timeout]);
  } catch (error) {
    throw serviceUnavailable(error);
  } finally {
    clearTimeout(timer);
  }
  return ok({ status: 'ready', checks: { database: 'ok' } });
};
