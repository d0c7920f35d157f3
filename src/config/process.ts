import dotenv from 'dotenv';
import type { Config } from './config.js';
import { loadConfig } from './load.js';
import type { Env } from './reader.js';

/**
 * This process's environment, with a `.env` file in the working directory filling in what is unset.
 * The one place that reads `process.env`: everything else is handed the Config made from it.
 */
export function processEnvironment(): Env {
  dotenv.config();
  return process.env;
}

/** The configuration of this process, for the server and `npm run migrate`. */
export function loadProcessConfig(): Config {
  return loadConfig(processEnvironment(), Boolean(process.stdout.isTTY));
}

/**
 * What a cluster worker's environment needs besides the primary's to load the same configuration:
 * a SECRET_KEY made up for this run, so that every worker signs and checks tokens with one key.
 */
export function workerEnvironment(config: Config): Env {
  return config.secret.generated ? { SECRET_KEY: config.secret.key } : {};
}
