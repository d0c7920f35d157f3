import type { Executor } from '../db/types.js';
import type { OrganizationClaims } from '../sessions/tokens.js';
import type { Grant, ProviderContext } from './library.js';
import { resourceServerOf } from './resources.js';

/** The header `typ` of an access token for an API (RFC 9068 §2.1), which the library writes. */
export const RESOURCE_TOKEN_TYP = 'at+jwt';

/** What the library knows of a resource server a request named (its model `ResourceServer`). */
interface ResourceServerModel {
  identifier(): string;
  readonly scopes: Set<string>;
}

/** A request's context, with the resource servers it named (resolved before the grant is loaded). */
type RequestWithResources = NonNullable<ProviderContext['oidc']> & { resourceServers?: Record<string, ResourceServerModel> };

/** An access token as the provider is issuing it: for an API when `resourceServer` is set. */
interface IssuingToken {
  kind?: string;
  grantId?: string;
  accountId?: string;
  scope?: string;
  resourceServer?: ResourceServerModel;
}

/**
 * The APIs (resource servers, RFC 8707) in the provider: `features.resourceIndicators`, the claims of
 * their JWT access tokens (RFC 9068), and the grants of first-party clients, which are given the API
 * scopes they ask for as they are their OpenID ones.
 *
 * An application names an API with `resource` at the authorization request; its token is for that
 * API whether or not the token request names it again. The token's `scope` holds the API's scopes
 * the person allowed the application, plus those that the permissions of the person's role in the
 * active organisation name; with an organisation it carries `org_id`, `org_role` and `org_permissions`.
 */
export function resourceTokenSupport(options: {
  db: Executor;
  /** The signing algorithm of the tokens, one of the provider's keys' (published at /.well-known/jwks.json). */
  algorithm: string;
  accessTokenSeconds: number;
  /** The claims of the organisation the token's grant acts for, while the person is a member. */
  organizationClaims: (ctx: ProviderContext, token: IssuingToken) => Promise<OrganizationClaims | undefined>;
  InvalidTarget: new (description?: string) => Error;
}) {
  const { db, algorithm, accessTokenSeconds, organizationClaims, InvalidTarget } = options;
  return {
    feature: {
      enabled: true,
      // The token is for the one API the authorization named, unless the token request names another it named.
      useGrantedResource: () => true,
      async getResourceServerInfo(_ctx: unknown, indicator: string) {
        const server = await resourceServerOf(db, indicator);
        if (!server) throw new InvalidTarget('no API has this resource indicator');
        return {
          scope: server.scopes.join(' '),
          audience: server.indicator,
          accessTokenFormat: 'jwt',
          accessTokenTTL: accessTokenSeconds,
          jwt: { sign: { alg: algorithm } },
        };
      },
    },

    /**
     * The claims an API's token adds (null for any other token): the active organisation's, and the
     * API scopes its role's permissions name, which join the token's `scope`.
     */
    async claims(ctx: ProviderContext, token: IssuingToken): Promise<Record<string, unknown> | null> {
      const server = token.resourceServer;
      if (!server || token.kind !== 'AccessToken') return null;
      const organization = token.accountId ? await organizationClaims(ctx, token) : undefined;
      if (!organization) return {};
      const scopes = new Set((token.scope ?? '').split(' ').filter((scope) => scope !== ''));
      for (const permission of organization.org_permissions) if (server.scopes.has(permission)) scopes.add(permission);
      token.scope = [...scopes].join(' ');
      return { org_id: organization.org_id, org_role: organization.org_role, org_permissions: organization.org_permissions };
    },

    /** formats.customizers.jwt: the token's `scope` as `claims` left it. */
    customizeJwt(_ctx: unknown, token: IssuingToken, jwt: { payload: Record<string, unknown> }): void {
      jwt.payload.scope = token.scope || undefined;
    },

    /** A first-party client's grant holds the API scopes its authorization asks for, as it holds the OpenID ones. */
    grantRequested(ctx: { oidc?: RequestWithResources }, grant: Grant): void {
      const oidc = ctx.oidc;
      if (!oidc) return;
      for (const [indicator, server] of Object.entries(oidc.resourceServers ?? {})) {
        grant.addResourceScope(indicator, [...oidc.requestParamScopes].filter((scope) => server.scopes.has(scope)).join(' '));
      }
    },
  };
}
