/**
 * The console's OAuth client, which exists without anyone making it: a first-party public client
 * (PKCE, no secret) whose addresses are the console's own under APP_URL. It is not a row of
 * `oauth_clients` (admins neither see nor change it) and it is given to the provider as a static
 * client.
 */
export const CONSOLE_CLIENT_ID = 'console';

export const CONSOLE_CLIENT_NAME = 'Console';

export function consoleClientMetadata(appUrl: string): Record<string, unknown> {
  const base = appUrl.replace(/\/+$/, '');
  return {
    client_id: CONSOLE_CLIENT_ID,
    client_name: CONSOLE_CLIENT_NAME,
    application_type: 'web',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: [`${base}/console/callback`],
    post_logout_redirect_uris: [`${base}/console/`],
    scope: 'openid profile email offline_access organizations',
  };
}
