/**
 * The providers the console offers to add. For a well-known provider the service fills what is left
 * out (its endpoints, scopes and claims) when the slug is the provider's own, so the form asks only
 * for what the provider gave the admin; a generic one asks for its issuer or endpoints too.
 */
export type PresetKey = 'google' | 'github' | 'microsoft' | 'apple' | 'gitlab' | 'oidc' | 'oauth2';

export interface PresetChoice {
  key: PresetKey;
  label: string;
  /** The slug the service fills the preset for; none for a generic provider, whose slug is asked. */
  slug?: string;
  kind: 'oidc' | 'oauth2';
  /** Where the admin gets the client ID and secret, in a sentence. */
  where: string;
  /** Whether the provider needs a client secret (a generic one may sign in as a public client). */
  secretRequired: boolean;
  secretHint?: string;
}

export const PRESET_CHOICES: readonly PresetChoice[] = [
  {
    key: 'google',
    label: 'Google',
    slug: 'google',
    kind: 'oidc',
    where: 'Google Cloud console → APIs & Services → Credentials → OAuth client ID (a web application).',
    secretRequired: true,
  },
  {
    key: 'github',
    label: 'GitHub',
    slug: 'github',
    kind: 'oauth2',
    where: 'GitHub → Settings → Developer settings → OAuth Apps (or a GitHub App).',
    secretRequired: true,
  },
  {
    key: 'microsoft',
    label: 'Microsoft',
    slug: 'microsoft',
    kind: 'oidc',
    where: 'Microsoft Entra admin center → App registrations: the application (client) ID, the directory (tenant) ID and a client secret.',
    secretRequired: true,
  },
  {
    key: 'apple',
    label: 'Apple',
    slug: 'apple',
    kind: 'oidc',
    where: 'Apple Developer → Certificates, Identifiers & Profiles: the Services ID is the client ID.',
    secretRequired: true,
    secretHint: 'The client secret JWT signed with your Sign in with Apple key (it lasts at most six months).',
  },
  {
    key: 'gitlab',
    label: 'GitLab',
    slug: 'gitlab',
    kind: 'oidc',
    where: 'GitLab.com → Edit profile → Applications (scopes openid, email, profile).',
    secretRequired: true,
  },
  {
    key: 'oidc',
    label: 'Another OpenID Connect provider',
    kind: 'oidc',
    where: 'Any OpenID Connect provider (Keycloak, Okta, Auth0, a company’s SSO): its issuer, and the client registered there.',
    secretRequired: false,
  },
  {
    key: 'oauth2',
    label: 'Another OAuth 2.0 provider',
    kind: 'oauth2',
    where:
      'A provider without OpenID Connect: its authorization, token and user-info endpoints, and which user-info fields hold who the person is.',
    secretRequired: false,
  },
];

/** Microsoft's issuer names the tenant: `https://login.microsoftonline.com/{tenant}/v2.0`. */
export function microsoftIssuer(tenant: string): string {
  return `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/v2.0`;
}

/** What to register at the provider as the redirect URI: the service's callback for this slug. */
export function callbackUrl(slug: string): string {
  return `${window.location.origin}/api/auth/providers/${slug || '{slug}'}/callback`;
}
