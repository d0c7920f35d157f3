// Runs against a client orval generated from api/openapi.yaml (into ../orval), with its fetch
// client: the token URL's form for a password login and for a refresh.
import { getMe, login } from '../orval/client.js';
import { check, sidOf, type OrvalFlowInput, type OrvalFlowResult } from './flow.js';
import { sent, setBaseUrl } from './orval-fetch.js';

export async function run(input: OrvalFlowInput): Promise<OrvalFlowResult> {
  setBaseUrl(input.baseUrl);
  const signedIn = await login({ grant_type: 'password', username: input.email, password: input.password });
  check(signedIn.status === 200, `form login answered ${signedIn.status}: ${JSON.stringify(signedIn.data)}`);
  const me = await getMe({ headers: { Authorization: `Bearer ${signedIn.data.access_token}` } });
  check(me.status === 200, `me answered ${me.status}`);

  const refreshed = await login({ grant_type: 'refresh_token', refresh_token: signedIn.data.refresh_token });
  check(refreshed.status === 200, `form refresh answered ${refreshed.status}: ${JSON.stringify(refreshed.data)}`);
  check(refreshed.data.data.refresh_token !== signedIn.data.refresh_token, 'the refresh token did not rotate');

  return {
    userId: me.data.data.id,
    signedInSid: sidOf(signedIn.data.refresh_token),
    signedInRefreshToken: signedIn.data.refresh_token,
    refreshedSid: sidOf(refreshed.data.refresh_token),
    refreshToken: refreshed.data.refresh_token,
    sent: [...sent],
  };
}
