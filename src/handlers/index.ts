import * as audit from './audit';
import * as auth from './auth';
import * as factors from './factors';
import * as health from './health';
import * as keys from './keys';
import * as users from './users';
import type { HandlerMap } from './types';

/** Every operation of api/openapi.yaml by operationId. */
export const handlers = { ...auth, ...users, ...audit, ...health, ...keys, ...factors } satisfies HandlerMap;
