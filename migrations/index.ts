import type { Migration } from 'kysely';
import * as initial from './20261121000000_initial.js';
import * as accountTokensAndOutbox from './20261121010000_account_tokens_and_outbox.js';
import * as userCountsAndSearch from './20261121020000_user_counts_and_search.js';
import * as auditEvents from './20261121030000_audit_events.js';
import * as pendingEmail from './20261123154553_pending_email.js';
import * as accountTokensRecent from './20261123160532_account_tokens_recent.js';
import * as secondFactors from './20261201090000_second_factors.js';
import * as apiKeys from './20261202090000_api_keys.js';
import * as webhooks from './20261202100000_webhooks.js';
import * as sessionRefreshTokenSealed from './20261203090000_session_refresh_token_sealed.js';
import * as emailCodes from './20261203100000_email_codes.js';
import * as identityProviders from './20261203110000_identity_providers.js';
import * as providerSignIns from './20261203110100_provider_sign_ins.js';
import * as rateLimits from './20261203141700_rate_limits.js';
import * as oidcProvider from './20261204090000_oidc_provider.js';
import * as identityLinks from './20261204100000_identity_links.js';
import * as providerCodeLinks from './20261204110000_provider_code_links.js';
import * as mailboxProof from './20261205090000_mailbox_proof.js';
import * as sessionAuthenticatedAt from './20261205100000_session_authenticated_at.js';
import * as organizations from './20261206090000_organizations.js';
import * as mfaChallengeOrganization from './20261207090000_mfa_challenge_organization.js';
import * as organizationDomains from './20261207100000_organization_domains.js';
import * as organizationInvitations from './20261207110000_organization_invitations.js';
import * as organizationMemberCounts from './20261208120000_organization_member_counts.js';
import * as oidcDevicePolls from './20261210050000_oidc_device_polls.js';
import * as backchannelLogouts from './20261210060000_backchannel_logouts.js';
import * as oauthResources from './20261210070000_oauth_resources.js';
import * as oauthClientChanges from './20261211090000_oauth_client_changes.js';

/** Every migration, by name; names sort in the order they run. */
export const migrations: Record<string, Migration> = {
  '20261121000000_initial': initial,
  '20261121010000_account_tokens_and_outbox': accountTokensAndOutbox,
  '20261121020000_user_counts_and_search': userCountsAndSearch,
  '20261121030000_audit_events': auditEvents,
  '20261123154553_pending_email': pendingEmail,
  '20261123160532_account_tokens_recent': accountTokensRecent,
  '20261201090000_second_factors': secondFactors,
  '20261202090000_api_keys': apiKeys,
  '20261202100000_webhooks': webhooks,
  '20261203090000_session_refresh_token_sealed': sessionRefreshTokenSealed,
  '20261203100000_email_codes': emailCodes,
  '20261203110000_identity_providers': identityProviders,
  '20261203110100_provider_sign_ins': providerSignIns,
  '20261203141700_rate_limits': rateLimits,
  '20261204090000_oidc_provider': oidcProvider,
  '20261204100000_identity_links': identityLinks,
  '20261204110000_provider_code_links': providerCodeLinks,
  '20261205090000_mailbox_proof': mailboxProof,
  '20261205100000_session_authenticated_at': sessionAuthenticatedAt,
  '20261206090000_organizations': organizations,
  '20261207090000_mfa_challenge_organization': mfaChallengeOrganization,
  '20261207100000_organization_domains': organizationDomains,
  '20261207110000_organization_invitations': organizationInvitations,
  '20261208120000_organization_member_counts': organizationMemberCounts,
  '20261210050000_oidc_device_polls': oidcDevicePolls,
  '20261210060000_backchannel_logouts': backchannelLogouts,
  '20261210070000_oauth_resources': oauthResources,
  '20261211090000_oauth_client_changes': oauthClientChanges,
};
