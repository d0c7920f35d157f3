import pino, { type Logger } from 'pino';
import type { Config } from './config';

export type { Logger };

/** JSON lines on stdout; fields that could carry a secret are redacted wherever they appear. */
export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    base: undefined,
    redact: {
      paths: [
        'password', '*.password', 'new_password', '*.new_password', 'current_password', '*.current_password',
        'password_hash', '*.password_hash', 'access_token', '*.access_token', 'refresh_token', '*.refresh_token',
        'token', '*.token', 'authorization', '*.authorization', 'req.headers.authorization', 'req.headers.cookie',
      ],
      censor: '[redacted]',
    },
  });
}
