import type { ProviderClaims } from './provider-repository.js';

/** What a provider's registration may leave out when its slug names a well-known provider. */
export interface Preset {
  kind: 'oidc' | 'oauth2';
  name: string;
  issuer?: string;
  authorization_url?: string;
  token_url?: string;
  userinfo_url?: string;
  emails_url?: string;
  scopes: string[];
  claims?: Partial<ProviderClaims>;
  /** How the provider answers: `form_post` has the browser post the answer to the callback. */
  responseMode?: 'form_post';
}

/** The claims of an OpenID Connect ID token and user-info answer (OpenID Connect Core §5.1). */
export const OIDC_CLAIMS: ProviderClaims = Object.freeze({
  subject: 'sub',
  email: 'email',
  email_verified: 'email_verified',
  name: 'name',
});

export const OIDC_SCOPES = ['openid', 'email', 'profile'];

/**
 * The well-known providers. Microsoft's issuer names the tenant
 * (`https://login.microsoftonline.com/{tenant}/v2.0`): its multi-tenant discovery document names
 * an issuer with a placeholder that no ID token carries, so the admin gives the tenant's.
 */
export const PRESETS: Readonly<Record<string, Preset>> = Object.freeze({
  google: { kind: 'oidc', name: 'Google', issuer: 'https://accounts.google.com', scopes: OIDC_SCOPES },
  microsoft: { kind: 'oidc', name: 'Microsoft', scopes: OIDC_SCOPES },
  // Apple posts its answer whenever the e-mail or name is asked for.
  apple: { kind: 'oidc', name: 'Apple', issuer: 'https://appleid.apple.com', scopes: ['openid', 'email'], responseMode: 'form_post' },
  gitlab: { kind: 'oidc', name: 'GitLab', issuer: 'https://gitlab.com', scopes: OIDC_SCOPES },
  github: {
    kind: 'oauth2',
    name: 'GitHub',
    authorization_url: 'https://github.com/login/oauth/authorize',
    token_url: 'https://github.com/login/oauth/access_token',
    userinfo_url: 'https://api.github.com/user',
    emails_url: 'https://api.github.com/user/emails',
    scopes: ['read:user', 'user:email'],
    // GitHub's /user has `id` and `name`; whether an address is verified only /user/emails says.
    claims: { subject: 'id', email: 'email', email_verified: null, name: 'name' },
  },
});
