import { sql } from 'kysely';
import { deriveKey, seal } from '../src/infra/sealed.js';
import { startTestApp, TEST_SECRET, type TestContext } from './support/app.js';
import { until } from './support/wait.js';

// Each process keeps the OAuth clients it has read in memory. A change to a client reaches the
// process that made it at once, and every other process as soon as PostgreSQL tells it: the client is
// used first (so that it is kept), then changed, and the old form must stop working.

let a: TestContext;
let admin: string;

beforeAll(async () => {
  a = await startTestApp();
  admin = await a.adminToken();
});
afterAll(() => a.close());

interface Client {
  id: string;
  secret: string;
}

async function newClient(): Promise<Client> {
  const res = await a.post(
    '/api/oauth/clients',
    { name: 'Reports', type: 'confidential', grant_types: ['client_credentials'], redirect_uris: [] },
    { token: admin },
  );
  expect(res.status).toBe(201);
  return { id: res.body.data.client_id, secret: res.body.data.client_secret };
}

/** The token endpoint's answer to a client credentials grant: its status and OAuth error, if any. */
async function grant(t: TestContext, client: Client): Promise<{ status: number; error?: string }> {
  const res = await fetch(`${t.baseUrl}/oauth2/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  const body = (await res.json()) as { access_token?: string; error?: string };
  if (res.status === 200) expect(body.access_token).toEqual(expect.any(String));
  return { status: res.status, error: body.error };
}

const ACCEPTED = { status: 200, error: undefined };
const UNKNOWN_CLIENT = { status: 401, error: 'invalid_client' };

describe('in the process that changes a client', () => {
  it('refuses the old secret at once after a rotation, and accepts the new one', async () => {
    const client = await newClient();
    expect(await grant(a, client)).toEqual(ACCEPTED);
    const rotated = await a.post(`/api/oauth/clients/${client.id}/rotate-secret`, undefined, { token: admin });
    expect(rotated.status).toBe(200);
    expect(await grant(a, client)).toEqual(UNKNOWN_CLIENT);
    expect(await grant(a, { id: client.id, secret: rotated.body.data.client_secret })).toEqual(ACCEPTED);
  });

  it('refuses a grant taken away at once, and a deleted client at once', async () => {
    const client = await newClient();
    expect(await grant(a, client)).toEqual(ACCEPTED);
    const changed = await a.put(
      `/api/oauth/clients/${client.id}`,
      { grant_types: ['authorization_code'], redirect_uris: ['https://app.example.com/cb'] },
      { token: admin },
    );
    expect(changed.status).toBe(200);
    expect(await grant(a, client)).toEqual({ status: 400, error: 'unauthorized_client' });

    const other = await newClient();
    expect(await grant(a, other)).toEqual(ACCEPTED);
    expect((await a.delete(`/api/oauth/clients/${other.id}`, { token: admin })).status).toBe(204);
    expect(await grant(a, other)).toEqual(UNKNOWN_CLIENT);
  });
});

// Two processes on one PostgreSQL database: here two apps, each with its own pool, its own memory and
// its own listening connection, as two machines behind a load balancer.
const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres' ? describe : describe.skip;

onPostgres('in every other process', () => {
  let b: TestContext;
  beforeAll(async () => {
    b = await startTestApp({}, { sameDatabaseAs: a });
  });
  afterAll(() => b.close());

  /** The connections listening for client changes on this database. */
  const listeners = async () =>
    (
      await sql<{ pid: number }>`
        select pid from pg_stat_activity where datname = current_database() and query = 'listen oauth_clients'
      `.execute(a.db)
    ).rows.map((row) => row.pid);

  beforeEach(async () => {
    await until(async () => (await listeners()).length >= 2, 'both apps listening for client changes');
  });

  it('stops honouring a secret rotated by another process', async () => {
    const client = await newClient();
    expect(await grant(b, client)).toEqual(ACCEPTED);
    const rotated = await a.post(`/api/oauth/clients/${client.id}/rotate-secret`, undefined, { token: admin });
    expect(rotated.status).toBe(200);
    await until(async () => (await grant(b, client)).status === 401, 'the other process refusing the old secret');
    expect(await grant(b, client)).toEqual(UNKNOWN_CLIENT);
    expect(await grant(b, { id: client.id, secret: rotated.body.data.client_secret })).toEqual(ACCEPTED);
  });

  it('forgets a client deleted straight in the database, as a command or another version would', async () => {
    const client = await newClient();
    expect(await grant(b, client)).toEqual(ACCEPTED);
    await sql`delete from oauth_clients where client_id = ${client.id}`.execute(a.db);
    await until(async () => (await grant(b, client)).status === 401, 'the other process forgetting the deleted client');
    expect(await grant(b, client)).toEqual(UNKNOWN_CLIENT);
  });

  it('drops a client within seconds even when its change was never announced', async () => {
    const client = await newClient();
    expect(await grant(b, client)).toEqual(ACCEPTED);
    // Triggers off, as a restore or a replica's apply would run: no NOTIFY goes out for this deletion.
    await a.db.transaction().execute(async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx);
      await sql`delete from oauth_clients where client_id = ${client.id}`.execute(trx);
    });
    await until(async () => (await grant(b, client)).status === 401, 'the other process forgetting the unannounced deletion', 15_000);
    expect(await grant(b, client)).toEqual(UNKNOWN_CLIENT);
  });

  it('misses no change made while its listening connection was lost', async () => {
    const client = await newClient();
    expect(await grant(b, client)).toEqual(ACCEPTED);
    const before = await listeners();
    // The server ends every listening connection; the secret changes before they are back.
    await sql`select pg_terminate_backend(pid) from pg_stat_activity where pid in (${sql.join(before)})`.execute(a.db);
    const secret = 'a-secret-set-while-nobody-listened-0123456789';
    const sealed = seal(deriveKey(TEST_SECRET, 'oauth-client-secret'), secret);
    await sql`update oauth_clients set client_secret_sealed = ${sealed} where client_id = ${client.id}`.execute(a.db);
    await until(async () => (await grant(b, client)).status === 401, 'the other process refusing the old secret');
    expect(await grant(b, { id: client.id, secret })).toEqual(ACCEPTED);
    // Both listen again, on new connections.
    await until(async () => {
      const now = await listeners();
      return now.length >= 2 && now.every((pid) => !before.includes(pid));
    }, 'both apps listening again');
  });
});
