import * as apiKeys from './api-keys.js';
import * as audit from './audit.js';
import * as auth from './auth.js';
import * as emailCode from './email-code.js';
import * as factors from './factors.js';
import * as health from './health.js';
import * as identityProviders from './identity-providers.js';
import * as keys from './keys.js';
import * as oauth from './oauth.js';
import * as oauthResources from './oauth-resources.js';
import * as organizations from './organizations.js';
import * as overview from './overview.js';
import * as organizationDomains from './organization-domains.js';
import * as organizationInvitations from './organization-invitations.js';
import * as users from './users.js';
import * as webhooks from './webhooks.js';
import type { HandlerMap, OperationId, OperationRequest, Operations, Services, WireReply } from './types.js';

/** Every operation of api/openapi.yaml by operationId. */
export const handlers = {
  ...auth,
  ...emailCode,
  ...users,
  ...audit,
  ...overview,
  ...health,
  ...keys,
  ...factors,
  ...apiKeys,
  ...webhooks,
  ...identityProviders,
  ...oauth,
  ...oauthResources,
  ...organizations,
  ...organizationDomains,
  ...organizationInvitations,
} satisfies HandlerMap;

/** The handlers as the HTTP layer runs them, bound to the app's services. */
export function operationsFor(services: Services): Operations {
  return {
    has: (operationId): operationId is OperationId => Object.hasOwn(handlers, operationId),
    // The contract layer has validated (and coerced) the request against this operation's schema:
    // that is what makes it the operation's `HandlerInput`.
    run: (operationId, request) => {
      const handler = handlers[operationId] as unknown as (input: OperationRequest, services: Services) => Promise<WireReply>;
      return handler(request, services);
    },
  };
}
