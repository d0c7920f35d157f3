import { consoleClientMetadata } from '../console/client.js';
import { providerLogoutSigner } from './backchannel-logout.js';
import type { Core } from '../wiring/core.js';
import { OauthClients } from './clients.js';
import type { ProviderPages } from './default-pages.js';
import { OauthGrants } from './grants.js';
import { createOidcProvider, type OidcProviderOptions } from './provider.js';
import { impersonationGrant } from '../impersonation/wiring.js';
import { OauthResources } from './resources.js';

/**
 * The service as an OpenID Connect provider (when OIDC_ENABLED): the provider itself, the admins'
 * clients, people's grants, and the JWK Set, which publishes the provider's keys beside the API's
 * (the same key when ALGORITHM is RS256 or ES256, and the RSA key beside an ES256 one).
 */
export function oidcRoom(
  core: Pick<Core, 'config' | 'db' | 'transact' | 'logger' | 'backchannelLogouts' | 'tokens' | 'mail' | 'clientCache'>,
  needs: {
    pages: ProviderPages;
    devicePages: OidcProviderOptions['devicePages'];
    admit: OidcProviderOptions['admit'];
    organizations: OidcProviderOptions['organizations'];
  },
) {
  const { config, db, transact, logger } = core;
  const oidc = config.oidc.enabled
    ? createOidcProvider({
        db,
        clients: core.clientCache,
        config: config.oidc,
        issuer: config.tokens.issuer,
        secret: config.secret.key,
        accessTokenMinutes: config.tokens.accessTokenExpireMinutes,
        refreshTokenDays: config.tokens.refreshTokenExpireDays,
        sessionDays: config.sessions.maxDays,
        trustProxy: config.server.trustProxy,
        allowPrivateUrls: config.providers.allowPrivateUrls,
        logger,
        pages: needs.pages,
        devicePages: needs.devicePages,
        admit: needs.admit,
        organizations: needs.organizations,
        builtInClients: config.console.enabled ? [consoleClientMetadata(config.account.appUrl)] : [],
        backchannelLogouts: core.backchannelLogouts,
        extraGrantTypes: config.impersonation.enabled ? [impersonationGrant(core)] : [],
      })
    : undefined;
  if (oidc) core.backchannelLogouts.signWith(providerLogoutSigner(() => oidc.instance()));
  const apiKeys = config.tokens.keys.jwks;
  const jwks = async () => {
    const added = ((await oidc?.publishedKeys()) ?? []).filter((jwk) => !apiKeys.keys.some((key) => key.kid === jwk.kid));
    return added.length > 0 ? { keys: [...apiKeys.keys, ...added] } : apiKeys;
  };
  return {
    oidc,
    jwks,
    oauthClients: new OauthClients(
      db,
      transact,
      config.secret.key,
      config.providers.allowPrivateUrls,
      config.impersonation.enabled,
      (clientId) => core.clientCache.forget(clientId),
    ),
    oauthGrants: new OauthGrants(db, transact),
    oauthResources: new OauthResources(db, transact),
  };
}
