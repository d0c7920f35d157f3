import { ok } from './reply.js';
import type { Handler, Reply, Services } from './types.js';

const summary = async ({ about }: Services): Promise<Reply<'healthCheck' | 'healthCheckAlias'>> =>
  ok({ status: 'ok', version: about.version, uptime_seconds: Math.floor((Date.now() - about.startedAt) / 1000) });

export const healthCheck: Handler<'healthCheck'> = async (_input, services) => summary(services);

/** `GET /health`, for probes set up without the trailing slash. */
export const healthCheckAlias: Handler<'healthCheckAlias'> = async (_input, services) => summary(services);

export const healthLive: Handler<'healthLive'> = async () => ok({ status: 'alive' });

export const healthReady: Handler<'healthReady'> = async (_input, { health }) => {
  await health.checkReady();
  return ok({ status: 'ready', checks: { database: 'ok' } });
};
