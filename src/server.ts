import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';
import { createApp, type App } from './app.js';
import { ConfigError, loadProcessConfig, workerEnvironment, type Config } from './config/index.js';
import { DatabaseConnectionError } from './db/connection-check.js';
import { DataDirRefused } from './db/data-dir.js';
import { DataDirInUse } from './db/data-dir-lock.js';
import { createHttpServer, listen, ListenError } from './http/listener.js';
import { createLogger, type Logger } from './logger.js';
import { serveClusterMetrics } from './infra/cluster-metrics.js';

/**
 * V8 lets the heap grow to up to four times what the last full collection kept before it collects
 * again, sized to the machine's memory rather than to what the process needs. Under a steady load the
 * service keeps about 30 MB, so a process would swing between 130 and over 200 MB resident. Growing by
 * half instead holds it near 140 MB at the same throughput (bench/README.md). A value given on the
 * command line wins.
 */
if (!process.execArgv.some((arg) => arg.startsWith('--heap-growing-percent'))) setFlagsFromString('--heap-growing-percent=50');

async function main(): Promise<void> {
  const config = loadProcessConfig();
  const logger = createLogger(config.logging);
  // Cluster workers inherit the primary's key (see supervise), so this is said once.
  if (config.secret.source === 'random' && cluster.isPrimary) {
    logger.warn('SECRET_KEY is not set and DATA_DIR keeps nothing: using a random key, so tokens will not survive a restart');
  }
  if (config.secret.source === 'data-dir' && cluster.isPrimary) {
    logger.info(`SECRET_KEY is not set: using the development key kept in ${config.secret.keptIn}; production needs SECRET_KEY`);
  }
  if (config.metrics.withheld && cluster.isPrimary) {
    logger.warn('/metrics is off: in production it needs METRICS_TOKEN (or METRICS_PUBLIC=true to serve it to anyone)');
  }
  if (cluster.isPrimary) for (const warning of config.warnings) logger.warn(warning);
  if (config.server.webConcurrency > 1 && cluster.isPrimary) {
    supervise(config, logger);
    return;
  }
  await serve(config, logger);
}

/** Runs the service in this process (alone, or as one worker of a cluster) until SIGTERM or SIGINT. */
async function serve(config: Config, logger: Logger): Promise<void> {
  // Signals are handled from the start: one that arrives while the app is starting stops it once started.
  let stopping = false;
  // eslint-disable-next-line prefer-const -- `stop` is registered before the start it waits for begins
  let started: Promise<{ app: App; server: Server }> | undefined;
  const { shutdownTimeoutSeconds } = config.server;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, timeoutSeconds: shutdownTimeoutSeconds }, 'shutting down: finishing requests in flight');
    started!
      .then(({ app, server }) => drain(server, app, shutdownTimeoutSeconds * 1000, logger))
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  started = (async () => {
    const app = await createApp(config, { logger });
    const { host, port: configuredPort } = config.server;
    const server = createHttpServer(config.server, app.koa.callback(), logger);
    try {
      await listen(server, configuredPort, host);
    } catch (error) {
      await app.close();
      throw error;
    }
    if (cluster.isWorker) {
      logger.info({ pid: process.pid }, 'worker listening');
    } else {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : configuredPort;
      // A loopback address is shown as localhost: the name browsers allow passkeys on (the default APP_URL's).
      const shown = host === '127.0.0.1' || host === '::1' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
      const base = `http://${shown}:${port}`;
      logger.info({ database: config.database.url ? 'postgres' : `embedded (${config.database.dataDir})` }, `listening on ${base}`);
      if (config.docs.enabled) logger.info(`API docs: ${base}/docs (ReDoc: ${base}/redoc)`);
    }
    return { app, server };
  })();
  await started;
}

/**
 * A graceful stop: readiness turns 503, the listener closes (new connections are refused), idle
 * keep-alive connections close, requests in flight finish (each response closes its connection),
 * and after `timeoutMs` whatever is left is cut. Then the background workers stop and the pool closes.
 */
async function drain(server: Server, app: App, timeoutMs: number, logger: Logger): Promise<void> {
  app.beginShutdown();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), timeoutMs);
  });
  if (await Promise.race([closed.then(() => false), timedOut])) {
    logger.warn({ timeoutMs }, 'requests still in flight at the shutdown timeout: closing their connections');
    server.closeAllConnections();
    await closed;
  }
  clearTimeout(timer);
  await app.close();
  logger.info('stopped');
}

/** Deaths in this window that make the supervisor give up instead of restarting workers forever. */
const CRASH_WINDOW_MS = 30_000;

/**
 * The primary of a cluster: forks `webConcurrency` workers that share the listening socket, replaces a
 * worker that dies, and on SIGTERM or SIGINT passes SIGTERM on and exits once every worker has stopped.
 */
function supervise(config: Config, logger: Logger): void {
  // Workers must sign and check tokens with one key: a generated one is made here and handed down.
  const workerEnv = workerEnvironment(config);
  const { webConcurrency, shutdownTimeoutSeconds } = config.server;
  // In-memory rate-limit counters live here, shared by every worker over IPC; PostgreSQL needs no go-between.
  if (config.limits.rateLimitEnabled && config.limits.store === 'memory') new RateLimiterClusterMaster();
  // A scrape of any worker answers with every worker's metrics, merged here.
  if (config.metrics.enabled) serveClusterMetrics();

  let stopping = false;
  const live = new Set<Worker>();
  const deaths: number[] = [];
  const fork = () => {
    const worker = cluster.fork(workerEnv);
    live.add(worker);
    logger.info({ worker: worker.id, pid: worker.process.pid }, 'worker started');
  };
  const signalAll = (signal: NodeJS.Signals) => {
    for (const worker of live) worker.process.kill(signal);
  };
  cluster.on('exit', (worker: Worker, code: number | null, signal: string | null) => {
    live.delete(worker);
    if (stopping) {
      logger.info({ worker: worker.id, pid: worker.process.pid, code, signal }, 'worker stopped');
      // A worker still starting has no handler yet and ends by the signal itself; it had nothing in flight.
      if (code !== 0 && signal !== 'SIGTERM') process.exitCode = 1;
      if (live.size === 0) process.exit();
      return;
    }
    const now = Date.now();
    deaths.push(now);
    while (deaths.length > 0 && deaths[0] < now - CRASH_WINDOW_MS) deaths.shift();
    logger.error({ worker: worker.id, pid: worker.process.pid, code, signal }, 'worker died');
    if (deaths.length > 2 * webConcurrency) {
      logger.error({ deaths: deaths.length, windowMs: CRASH_WINDOW_MS }, 'workers keep dying: giving up');
      stopping = true;
      process.exitCode = 1;
      signalAll('SIGTERM');
      if (live.size === 0) process.exit();
      return;
    }
    fork();
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: stopping workers');
    signalAll('SIGTERM');
    // Workers cut their own stragglers at the timeout; this is the backstop for one that hangs.
    setTimeout(
      () => {
        logger.error('workers did not stop in time: killing them');
        signalAll('SIGKILL');
        process.exit(1);
      },
      (shutdownTimeoutSeconds + 10) * 1000,
    ).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  logger.info({ workers: webConcurrency, pid: process.pid }, 'starting workers');
  for (let i = 0; i < webConcurrency; i++) fork();
}

main().catch((error: unknown) => {
  // A start refused for a reason the operator can fix is said in its own words, without a stack.
  if (
    error instanceof ConfigError ||
    error instanceof DatabaseConnectionError ||
    error instanceof ListenError ||
    error instanceof DataDirInUse ||
    error instanceof DataDirRefused
  ) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
