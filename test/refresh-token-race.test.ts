import { sql } from 'kysely';
import { startTestApp, type TestContext } from './support/app.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';
import { REDIRECT, relyingPartyLibraries, signInThroughProvider, type Application, type OpenIdClient } from './support/relying-party.js';

// The token endpoint stores what a refresh or a code's exchange issues, and marks the refresh token
// or code used, together and before it answers. A refresh token presented several times at once gives
// tokens once; a failure to store answers an error and gives nothing, and leaves the refresh token
// as it was.

let t: TestContext;
let oidc: OpenIdClient;
let app: Application;

beforeAll(async () => {
  ({ oidc } = await relyingPartyLibraries());
  // The issuer is the app's own address, as the relying party checks it against discovery.
  const port = await freePort();
  t = await startTestApp({ APP_URL: `http://127.0.0.1:${port}` }, { port });
  app = await seedOauthClient(t, { name: 'Notes', type: 'confidential', redirect_uris: [REDIRECT], first_party: true });
});
afterAll(() => t?.close());

/** A refresh at the token endpoint with the application's credentials: its status and body. */
async function refresh(refreshToken: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${t.baseUrl}/oauth2/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const records = (grantId: string) =>
  t.db
    .withTables<{ oidc_records: { model: string; grant_id: string | null; consumed_at: Date | null } }>()
    .selectFrom('oidc_records')
    .select(['model', 'consumed_at'])
    .where('grant_id', '=', grantId)
    .where('model', 'in', ['AccessToken', 'RefreshToken'])
    .execute();

const grantOf = async (refreshToken: string): Promise<string> => {
  const row = await t.db
    .withTables<{ oidc_records: { model: string; id: string; grant_id: string | null } }>()
    .selectFrom('oidc_records')
    .select('grant_id')
    .where('model', '=', 'RefreshToken')
    .where('id', '=', refreshToken)
    .executeTakeFirstOrThrow();
  return row.grant_id!;
};

it('gives tokens once for a refresh token presented eight times at once', async () => {
  const who = await t.register();
  const { tokens } = await signInThroughProvider(oidc, t, app, who);
  const grantId = await grantOf(tokens.refresh_token!);

  const answers = await Promise.all(Array.from({ length: 8 }, () => refresh(tokens.refresh_token!)));

  const given = answers.filter((answer) => answer.status === 200);
  expect(given).toHaveLength(1);
  for (const answer of answers.filter((each) => each.status !== 200)) {
    expect(answer).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'grant request is invalid' } });
  }
  // At most the one pair given is stored unused (none, where a later request saw the token used and
  // revoked the grant, as the provider does when a used refresh token comes back).
  const unused = (await records(grantId)).filter((row) => row.model === 'RefreshToken' && row.consumed_at === null);
  expect(unused.length).toBeLessThanOrEqual(1);
});

it('answers server_error and gives nothing when the tokens cannot be stored, and leaves the refresh token usable', async () => {
  const who = await t.register();
  const { tokens } = await signInThroughProvider(oidc, t, app, who);
  const grantId = await grantOf(tokens.refresh_token!);
  const before = await records(grantId);

  // The database refuses new access tokens of this grant for a while.
  await sql`create function refuse_access_tokens() returns trigger language plpgsql as $$
    begin
      if new.model = 'AccessToken' and new.grant_id = ${sql.lit(grantId)} then raise exception 'refused'; end if;
      return new;
    end $$`.execute(t.db);
  await sql`create trigger refuse_access_tokens before insert on oidc_records for each row execute function refuse_access_tokens()`.execute(
    t.db,
  );
  let refused: { status: number; body: Record<string, unknown> };
  try {
    refused = await refresh(tokens.refresh_token!);
  } finally {
    await sql`drop trigger refuse_access_tokens on oidc_records`.execute(t.db);
    await sql`drop function refuse_access_tokens()`.execute(t.db);
  }
  expect(refused).toEqual({ status: 500, body: { error: 'server_error', error_description: 'oops! something went wrong' } });
  expect(await records(grantId)).toEqual(before);

  const given = await refresh(tokens.refresh_token!);
  expect(given.status).toBe(200);
  expect(given.body).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String) });
  const info = await fetch(`${t.baseUrl}/oauth2/userinfo`, { headers: { authorization: `Bearer ${String(given.body.access_token)}` } });
  expect(info.status).toBe(200);
  expect(((await info.json()) as { email?: string }).email).toBe(who.email);
});
