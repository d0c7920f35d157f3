import 'dotenv/config';
import { createApp } from './app';
import { ConfigError, loadConfig } from './config';
import { createLogger } from './logger';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config);
  if (config.secretKeyGenerated) {
    logger.warn('SECRET_KEY is not set: using a random key, so tokens will not survive a restart');
  }
  const app = await createApp(config, { logger });
  const server = app.koa.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    logger.info({ database: config.databaseUrl ? 'postgres' : `embedded (${config.dataDir})` }, `listening on ${base}`);
    if (config.docsEnabled) logger.info(`API docs: ${base}/docs (ReDoc: ${base}/redoc)`);
  });

  const stop = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    server.close(() => {
      app.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
