import type { IncomingMessage, ServerResponse } from 'node:http';
import type Koa from 'koa';

/** The library's module: the Provider class, the interaction policy and the errors its endpoints answer with. */
export interface ProviderModule {
  default: ProviderClass;
  interactionPolicy: InteractionPolicy;
  errors: {
    InvalidScope: new (description: string, scope: string) => Error;
    InvalidClientMetadata: new (description: string) => Error;
    InvalidRequest: new (description: string) => Error;
    AccessDenied: new (description: string) => Error;
    SlowDown: new (description?: string) => Error;
    InvalidTarget: new (description?: string) => Error;
    /** Answered `grant request is invalid`; its detail is only logged. */
    InvalidGrant: new (detail?: string) => Error;
  };
}

/** oidc-provider's interaction policy helpers: the base policy, its prompts and their checks. */
export interface InteractionPolicy {
  base(): Array<{ name: string; checks: Array<{ reason: string; check: (ctx: ProviderContext) => boolean | Promise<boolean> }> }>;
}

/** The parts of oidc-provider's API this service uses (the package ships no types). */
export interface ProviderClass {
  new (issuer: string, configuration: Record<string, unknown>): Provider;
  /** The request the provider is answering, in its own context. */
  readonly ctx: ProviderContext | undefined;
}

export interface ProviderContext {
  oidc?: {
    /** The provider's name for the endpoint answering (`end_session_confirm`, `token`, ...). */
    route?: string;
    result?: { login?: { serviceSessionId?: unknown } };
    client?: { clientId: string };
    session?: { accountId?: string };
    params?: Record<string, unknown>;
    requestParamScopes: Set<string>;
    requestParamClaims: Set<string>;
    provider: Provider;
    account?: { accountId: string };
    /** The request's parsed form body, every parameter in it (the grant's own or not). */
    body?: Record<string, string | string[] | undefined>;
    /** What the request has loaded so far: the grant, the account, the tokens. */
    entities?: { Grant?: Grant; Account?: { accountId: string } };
  };
}

export interface Grant {
  readonly jti: string;
  accountId: string;
  clientId: string;
  /** The organisation the grant's tokens act for (src/oidc/organizations.ts keeps it with the grant). */
  organizationId?: number;
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(resource: string, scope: string): void;
  getOIDCScope(): string;
  save(): Promise<string>;
}

export interface ClientModel {
  clientId: string;
  clientName?: string;
  includeSid(): boolean;
}

export interface Interaction {
  readonly uid: string;
  readonly jti: string;
  prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
  params: Record<string, unknown>;
  session?: { accountId: string; uid?: string };
  grantId?: string;
  lastSubmission?: Record<string, unknown>;
  returnTo: string;
}

/** Middleware around the provider's own routes (it runs before and after them): `Provider#use`. */
export type ProviderMiddleware = (ctx: Koa.Context, next: () => Promise<void>) => Promise<void>;

export interface Provider {
  proxy: boolean;
  readonly app: Koa;
  callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
  interactionResult(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission?: boolean },
  ): Promise<string>;
  on(event: string, listener: (...args: unknown[]) => void): void;
  readonly Grant: { new (properties: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> };
  readonly Client: { find(id: string): Promise<ClientModel | undefined>; prototype: ClientModel };
  readonly ClientCredentials: { prototype: { save: (this: unknown, ...args: unknown[]) => Promise<string>; scope?: string } };
  readonly IdToken: { prototype: { issue: (this: unknown, options: { use: string }) => Promise<string> } };
  readonly AccessToken: { find(value: string): Promise<AccessTokenModel | undefined> };
}

/** What the service reads of an access token the provider issued. */
export interface AccessTokenModel {
  accountId?: string;
  clientId?: string;
  sessionUid?: string;
  readonly isExpired: boolean;
}

let library: Promise<ProviderModule> | undefined;

/**
 * oidc-provider's Provider class, loaded once per process. The library warns on any Node.js before
 * 22 (its supported runtimes); that one line is left out of standard error here, and the app's log
 * says it instead (see `runtimeSupported`).
 */
export async function providerClass(): Promise<ProviderClass> {
  return (await providerModule()).default;
}

/** The library's module, loaded once per process. */
export function providerModule(): Promise<ProviderModule> {
  library ??= (async () => {
    const warn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].includes('oidc-provider WARNING: Unsupported runtime')) return;
      warn(...args);
    };
    try {
      return (await import('oidc-provider')) as ProviderModule;
    } finally {
      console.warn = warn;
    }
  })();
  return library;
}

/** Whether this Node.js is one the library supports (22 and later). */
export function runtimeSupported(): boolean {
  return Number(process.versions.node.split('.')[0]) >= 22;
}
