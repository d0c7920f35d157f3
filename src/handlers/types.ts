import type { OauthClients } from '../oidc/clients.js';
import type { OauthGrants } from '../oidc/grants.js';
import type { OauthResources } from '../oidc/resources.js';
import type { operations } from '../../generated/openapi.js';
import type { KeyRing } from '../config/keys.js';
import type { LinkedIdentities } from '../providers/identities.js';
import type { IdentityProviderRegistry } from '../providers/registry.js';
import type { ProviderSignIn } from '../providers/sign-in.js';
import type { Reauthentication } from '../reauthentication/reauthentication.js';
import type { AuthService } from '../sessions/auth.js';
import type { ClientInfo, Principal } from '../principal.js';
import type { AccountService } from '../users/account.js';
import type { EmailCodeSignIn } from '../email-code/email-code-sign-in.js';
import type { ApiKeyService } from '../api-keys/api-keys.js';
import type { AuditService } from '../audit/audit.js';
import type { AdminOverview } from '../admin-overview/overview.js';
import type { UserSessions } from '../sessions/user-sessions.js';
import type { FactorService } from '../mfa/factors.js';
import type { HealthService } from '../health/health.js';
import type { MfaSignIn } from '../mfa/mfa-sign-in.js';
import type { UserImport } from '../user-import/user-import.js';
import type { UserService } from '../users/users.js';
import type { WebhookService } from '../webhooks/webhooks.js';
import type { Organizations } from '../organizations/organizations.js';
import type { OrganizationRoles } from '../organizations/organization-roles.js';
import type { OrganizationDomains } from '../organizations/domains.js';
import type { OrganizationSignIn } from '../organizations/sign-in-policy.js';
import type { OrganizationInvitations } from '../organizations/invitations.js';

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

type Responses<K extends OperationId> = operations[K]['responses'];
/** A handler answers only with success; every failure is thrown and rendered by the HTTP layer. */
type SuccessStatus = 200 | 201 | 202 | 204 | 302;
type StatusOf<K extends OperationId> = Extract<keyof Responses<K>, SuccessStatus>;
type JsonBodyOf<R> = R extends { content: { 'application/json': infer B } } ? B : undefined;
type ReplyWith<S, B> = [B] extends [undefined]
  ? { status: S; body?: undefined; headers?: Record<string, string> }
  : { status: S; body: B; headers?: Record<string, string> };

/**
 * What the handler of operation K answers with, as the contract declares it: one of its 2xx statuses
 * with that status's JSON body, so a status or a body the contract does not declare for K is a
 * compile error.
 */
export type Reply<K extends OperationId> = { [S in StatusOf<K>]: ReplyWith<S, JsonBodyOf<Responses<K>[S]>> }[StatusOf<K>];

/** A reply as the HTTP layer writes it, whichever operation it answers. */
export interface WireReply {
  status: number;
  /** The whole JSON body, envelope included; absent for 204. */
  body?: unknown;
  /** Response headers of the operation's own (Cache-Control, say). */
  headers?: Record<string, string>;
}

/** A request as the HTTP layer hands it to an operation, once validated against that operation's contract. */
export interface OperationRequest {
  body: unknown;
  query: Record<string, unknown>;
  path: Record<string, unknown>;
  principal: Principal | undefined;
  client: ClientInfo;
}

/**
 * All the HTTP layer knows of the handlers: each operation of the contract by operationId, bound to
 * the services. It never names a handler, so a new operation needs no change in src/http.
 */
export interface Operations {
  has(operationId: string): operationId is OperationId;
  run(operationId: OperationId, request: OperationRequest): Promise<WireReply>;
}

/** The services a handler may call, built once per app. */
export interface Services {
  /** What the health check reports of this process: the configured version and when it started. */
  about: { version: string; startedAt: number };
  /**
   * The public keys of the token signing keys and of the OpenID Connect provider's ID tokens, as
   * `/.well-known/jwks.json` publishes them.
   */
  jwks: () => Promise<KeyRing['jwks']>;
  auth: AuthService;
  account: AccountService;
  users: UserService;
  imports: UserImport;
  audit: AuditService;
  /** The deployment at a glance, for admins. */
  overview: AdminOverview;
  /** Another user's sessions, for admins. */
  userSessions: UserSessions;
  health: HealthService;
  factors: FactorService;
  mfa: MfaSignIn;
  apiKeys: ApiKeyService;
  webhooks: WebhookService;
  emailCode: EmailCodeSignIn;
  providers: IdentityProviderRegistry;
  providerSignIn: ProviderSignIn;
  /** The OpenID Connect provider's clients, for admins. */
  oauthClients: OauthClients;
  /** What people allowed the provider's clients. */
  oauthGrants: OauthGrants;
  /** The APIs the provider issues JWT access tokens for, for admins. */
  oauthResources: OauthResources;
  identities: LinkedIdentities;
  /** Proof of presence before a new way in, and its renewal. */
  reauthentication: Reauthentication;
  organizations: Organizations;
  /** The roles every organisation shares, for admins. */
  organizationRoles: OrganizationRoles;
  /** Organisations' domains and their verification. */
  organizationDomains: OrganizationDomains;
  /** Organisations' sign-in policies, and where an address signs in. */
  organizationSignIn: OrganizationSignIn;
  /** Invitations to join an organisation, and their answers. */
  organizationInvitations: OrganizationInvitations;
}

export type Handler<K extends OperationId> = (input: HandlerInput<K>, services: Services) => Promise<Reply<K>>;

/** Every operation of the contract, each with its handler: a missing one is a compile error. */
export type HandlerMap = { [K in OperationId]: Handler<K> };
