export type * from './config';
export type { AsymmetricAlgorithm, KeyRing, PublicJwk } from './keys';
export { loadConfig } from './load';
export { dataDirSecret, loadProcessConfig, processEnvironment, workerEnvironment } from './process';
export { ConfigError, type Env } from './reader';
