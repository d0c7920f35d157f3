import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';
import type { LoggingConfig } from './config/index.js';

const require = createRequire(import.meta.url);

export type { Logger };

const CENSOR = '[redacted]';

/**
 * Properties of an error that can echo what was sent or stored: PGlite puts a query's parameters
 * on its errors (`params`), PostgreSQL's `detail` can quote a whole row ("Failing row contains
 * (...)", with its password hash), and body parsers attach the raw request body (`body`).
 */
const ERROR_FIELDS_WITH_DATA = ['params', 'parameters', 'queryOptions', 'detail', 'body', 'rawBody', 'headers'];

/** pino's error serializer (message, stack and causes), minus the fields that can carry data. */
function serializeError(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error) as unknown;
  if (typeof serialized !== 'object' || serialized === null) return serialized;
  const record = serialized as Record<string, unknown>;
  for (const field of ERROR_FIELDS_WITH_DATA) {
    if (record[field] !== undefined) record[field] = CENSOR;
  }
  if (Array.isArray(record.aggregateErrors)) record.aggregateErrors = record.aggregateErrors.map(serializeError);
  return serialized;
}

/**
 * JSON lines on stdout (or `destination`), or pino-pretty's lines with `logFormat: 'pretty'`; fields
 * that could carry a secret are redacted wherever they appear, and errors are logged without the
 * data they may carry.
 */
export function createLogger(
  config: Pick<LoggingConfig, 'level'> & Partial<Pick<LoggingConfig, 'format'>>,
  destination?: DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    level: config.level,
    base: undefined,
    serializers: { err: serializeError },
    redact: {
      paths: [
        'password',
        '*.password',
        'new_password',
        '*.new_password',
        'current_password',
        '*.current_password',
        'password_hash',
        '*.password_hash',
        'access_token',
        '*.access_token',
        'refresh_token',
        '*.refresh_token',
        'refresh_token_hash',
        '*.refresh_token_hash',
        'previous_token_hash',
        '*.previous_token_hash',
        'grace_token_hashes',
        '*.grace_token_hashes',
        'refresh_token_sealed',
        '*.refresh_token_sealed',
        'token_hash',
        '*.token_hash',
        'key_hash',
        '*.key_hash',
        'token',
        '*.token',
        'authorization',
        '*.authorization',
        'req.headers.authorization',
        'req.headers.cookie',
      ],
      censor: CENSOR,
    },
  };
  if (config.format === 'pretty') {
    const pretty = prettyStream(destination);
    if (pretty) return pino(options, pretty);
  }
  // Written asynchronously: while one write to stdout is under way, the lines that follow wait and go
  // out together in the next, so a busy process makes one write for many requests' lines instead of
  // one each (synchronous, that write was some 7 % of the CPU time of a read route under load); a quiet
  // one writes each line as it comes. Whatever waits is written before the process exits.
  const logger = pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
  if (config.format === 'pretty') logger.warn('LOG_FORMAT=pretty, but pino-pretty is not installed: logging JSON');
  return logger;
}

/**
 * pino-pretty in this thread, one line per entry. It is a development dependency, so an install
 * without those may not have it: then undefined, and the caller falls back to JSON.
 */
function prettyStream(destination?: DestinationStream): DestinationStream | undefined {
  let build: typeof import('pino-pretty').build;
  try {
    // Optional: a production install may not have it
    build = (require('pino-pretty') as typeof import('pino-pretty')).build;
  } catch {
    return undefined;
  }
  return build({
    destination,
    colorize: destination === undefined && Boolean(process.stdout.isTTY),
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
    sync: true,
  });
}
