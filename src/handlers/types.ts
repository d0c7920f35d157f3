import type { operations } from '../../generated/openapi';
import type { Config } from '../config';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types';
import type { AuthService, ClientInfo, Principal } from '../services/auth';
import type { AccountService } from '../services/account';
import type { AuditTrail } from '../services/audit';
import type { UserImport } from '../services/user-import';
import type { UserService } from '../services/users';

export type OperationId = keyof operations;

type JsonOrForm<C> = C extends { 'application/json': infer B } ? B : C extends { 'application/x-www-form-urlencoded': infer F } ? F : never;
type RequestBodyOf<K extends OperationId> = operations[K] extends { requestBody: { content: infer C } }
  ? JsonOrForm<C>
  : operations[K] extends { requestBody?: { content: infer C } }
    ? JsonOrForm<C> | undefined
    : undefined;
type ParametersOf<K extends OperationId> = operations[K]['parameters'];
type QueryOf<K extends OperationId> = ParametersOf<K> extends { query?: infer Q } ? NonNullable<Q> : Record<string, never>;
type PathOf<K extends OperationId> = ParametersOf<K> extends { path: infer P } ? P : Record<string, never>;

/** What an operation handler receives: the request as validated (and coerced) against the contract. */
export interface HandlerInput<K extends OperationId> {
  body: RequestBodyOf<K>;
  query: QueryOf<K>;
  path: PathOf<K>;
  /** Set on operations with a security requirement, once the token has been accepted. */
  principal: Principal | undefined;
  client: ClientInfo;
}

/** What the handler answers with; the HTTP layer writes it. */
export interface Reply {
  status: number;
  /** The whole JSON body, envelope included; absent for 204. */
  body?: unknown;
  /** Response headers of the operation's own (Cache-Control, say). */
  headers?: Record<string, string>;
}

/** The services a handler may call, built once per app. */
export interface Services {
  config: Config;
  db: Kysely<Database>;
  auth: AuthService;
  account: AccountService;
  users: UserService;
  imports: UserImport;
  audit: AuditTrail;
  startedAt: number;
  /** `draining` once the process has begun to stop: readiness then answers 503. */
  lifecycle: { readonly draining: boolean };
}

export type Handler<K extends OperationId> = (input: HandlerInput<K>, services: Services) => Promise<Reply>;

/** Every operation of the contract, each with its handler: a missing one is a compile error. */
export type HandlerMap = { [K in OperationId]: Handler<K> };
