import { join } from 'node:path';
import dotenv from 'dotenv';
import { keptSecretKey, SECRET_KEY_FILE } from '../db/data-dir.js';
import type { Config } from './config.js';
import { loadConfig, type KeptSecret } from './load.js';
import type { Env } from './reader.js';

/**
 * This process's environment, with a `.env` file in the working directory filling in what is unset.
 * The one place that reads `process.env`: everything else is handed the Config made from it.
 */
export function processEnvironment(): Env {
  dotenv.config();
  return process.env;
}

/** Development without SECRET_KEY: the key kept in DATA_DIR, shared by the server and the command line. */
export const dataDirSecret: KeptSecret = (dataDir) => ({ key: keptSecretKey(dataDir), path: join(dataDir, SECRET_KEY_FILE) });

/** The configuration of this process, for the server and `npm run migrate`. */
export function loadProcessConfig(): Config {
  return loadConfig(processEnvironment(), Boolean(process.stdout.isTTY), dataDirSecret);
}

/**
 * What a cluster worker's environment needs besides the primary's to load the same configuration:
 * a SECRET_KEY made up for this run, so that every worker signs and checks tokens with one key.
 */
export function workerEnvironment(config: Config): Env {
  return config.secret.source === 'random' ? { SECRET_KEY: config.secret.key } : {};
}
