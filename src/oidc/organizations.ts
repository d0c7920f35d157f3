import type { Executor } from '../db/types.js';
import type { OrganizationClaims } from '../sessions/tokens.js';
import { userIdOf } from './adapter.js';
import type { Grant, Provider, ProviderContext } from './library.js';

/** The scope whose claim `organizations` lists the person's organisations. */
export const ORGANIZATIONS_SCOPE = 'organizations';
/** The authorization parameter naming the organisation a sign-in is for (its id or slug). */
export const ORGANIZATION_PARAM = 'organization';
/** The refresh_token grant's parameter switching the organisation its tokens act for (empty: none). */
export const SWITCH_PARAM = 'organization_id';

const ID_OR_SLUG = /^[a-z0-9-]{1,48}$/;

/** What the provider asks of the organisations: who belongs where, with which role. */
export interface OrganizationDirectory {
  claims(db: Executor, userId: number, organizationId: number): Promise<OrganizationClaims | undefined>;
  idOf(idOrSlug: string): Promise<number | undefined>;
  membershipsOf(userId: number): Promise<Array<{ id: number; slug: string; name: string; role: string }>>;
}

type AccessDenied = new (description: string) => Error;
type InvalidRequest = new (description: string) => Error;

/**
 * The organisation a sign-in through the provider acts for. The application's grant remembers it, as
 * a session of the API does: the authorization parameter `organization` sets it, a refresh with
 * `organization_id` switches it, and each token issued under the grant carries `org_id` and
 * `org_role` from the membership as it is then. A person who is no longer a member gets tokens
 * without them, and the grant forgets the organisation.
 */
export function organizationSupport(options: {
  db: Executor;
  organizations: OrganizationDirectory;
  errors: { AccessDenied: AccessDenied; InvalidRequest: InvalidRequest };
}) {
  const { db, organizations, errors } = options;
  const notAMember = () => new errors.AccessDenied('the person is not a member of this organization');

  /** The membership's claims for the organisation `value` names; access_denied when there is none. */
  const membership = async (accountId: string, value: string): Promise<OrganizationClaims> => {
    const userId = userIdOf(accountId);
    const id = await organizations.idOf(value);
    const claims = id === undefined || userId === null ? undefined : await organizations.claims(db, userId, id);
    if (!claims) throw notAMember();
    return claims;
  };

  /** The membership's claims for the grant's organisation, while the person is a member of it. */
  const grantClaims = async (provider: Provider, grantId: string | undefined, accountId: string) => {
    const grant = grantId ? await provider.Grant.find(grantId) : undefined;
    const userId = userIdOf(accountId);
    if (grant?.organizationId === undefined || userId === null) return undefined;
    return organizations.claims(db, userId, grant.organizationId);
  };

  return {
    /** extraParams: the `organization` parameter is an id or a slug, or it is a malformed request. */
    extraParams: {
      [ORGANIZATION_PARAM]: (_ctx: unknown, value: string | undefined) => {
        if (value !== undefined && !ID_OR_SLUG.test(value)) {
          throw new errors.InvalidRequest(`${ORGANIZATION_PARAM} must be an organization's id or slug`);
        }
      },
    },

    /**
     * Called with the grant an authorization is about to use, once the person is known: the grant
     * acts for the organisation the request names (access_denied for a non-member), or for none.
     */
    async choose(ctx: ProviderContext, grant: Grant, accountId: string): Promise<void> {
      const chosen = grant;
      const value = ctx.oidc?.params?.[ORGANIZATION_PARAM];
      const organizationId = typeof value === 'string' && value !== '' ? (await membership(accountId, value)).org_id : undefined;
      if (chosen.organizationId === organizationId) return;
      if (organizationId === undefined) delete chosen.organizationId;
      else chosen.organizationId = organizationId;
      await chosen.save();
    },

    /**
     * The refresh_token grant's hook, before the refresh token is rotated: `organization_id` switches
     * the grant's organisation (access_denied for a non-member, with the refresh token unspent), and a
     * grant whose person left its organisation forgets it.
     */
    async refreshing(ctx: ProviderContext): Promise<void> {
      const oidc = ctx.oidc;
      const grant = oidc?.entities?.Grant;
      const accountId = oidc?.entities?.Account?.accountId;
      if (!oidc || !grant || !accountId) return;
      const requested = oidc.body?.[SWITCH_PARAM];
      if (Array.isArray(requested)) throw new errors.InvalidRequest(`${SWITCH_PARAM} must be given once`);
      let organizationId = grant.organizationId;
      if (typeof requested === 'string') {
        organizationId = requested === '' ? undefined : (await membership(accountId, requested)).org_id;
      } else if (organizationId !== undefined) {
        const userId = userIdOf(accountId);
        if (userId === null || !(await organizations.claims(db, userId, organizationId))) organizationId = undefined;
      }
      if (organizationId === grant.organizationId) return;
      if (organizationId === undefined) delete grant.organizationId;
      else grant.organizationId = organizationId;
      await grant.save();
    },

    /** The membership's claims of the organisation an access token's grant acts for, permissions included. */
    async activeClaims(ctx: ProviderContext, token: { grantId?: string; accountId?: string }) {
      if (!token.accountId || !ctx.oidc) return undefined;
      return grantClaims(ctx.oidc.provider, token.grantId, token.accountId);
    },

    /** extraTokenClaims: an access token acting for an organisation says which, and the person's role in it. */
    async tokenClaims(ctx: ProviderContext, token: { kind?: string; grantId?: string; accountId?: string }) {
      if (token.kind !== 'AccessToken' || !token.accountId || !ctx.oidc) return undefined;
      const claims = await grantClaims(ctx.oidc.provider, token.grantId, token.accountId);
      return claims && { org_id: claims.org_id, org_role: claims.org_role };
    },

    /** The claims of the account the ID token and userinfo add: `organizations`, and `org_id` and `org_role` of the grant's. */
    async accountClaims(provider: Provider, accountId: string, scope: string, token: { grantId?: string } | undefined) {
      const userId = userIdOf(accountId);
      if (userId === null) return {};
      const listed = scope.split(' ').includes(ORGANIZATIONS_SCOPE);
      const [memberships, active] = await Promise.all([
        listed ? organizations.membershipsOf(userId) : undefined,
        grantClaims(provider, token?.grantId, accountId),
      ]);
      return {
        ...(memberships && { organizations: memberships }),
        ...(active && { org_id: active.org_id, org_role: active.org_role }),
      };
    },
  };
}

/** The library's Grant keeps `organizationId` with its own fields when it is saved and found again. */
export function keepOrganizationOnGrants(provider: Provider): void {
  const Grant = provider.Grant as unknown as { IN_PAYLOAD: string[] };
  const fields = Grant.IN_PAYLOAD;
  Object.defineProperty(Grant, 'IN_PAYLOAD', { get: () => [...fields, 'organizationId'] });
}
