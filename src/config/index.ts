export type * from './config.js';
export type { AsymmetricAlgorithm, KeyRing, PublicJwk } from './keys.js';
export { loadConfig } from './load.js';
export { dataDirSecret, loadProcessConfig, processEnvironment, workerEnvironment } from './process.js';
export { ConfigError, type Env } from './reader.js';
