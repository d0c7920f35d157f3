import * as auth from './auth';
import * as health from './health';
import * as users from './users';
import type { HandlerMap } from './types';

/** Every operation of api/openapi.yaml by operationId. */
export const handlers = { ...auth, ...users, ...health } satisfies HandlerMap;
