import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { loadConfig } from '../src/config/index.js';
import type { ProviderFlowTable, UserIdentityTable } from '../src/providers/identity-repository.js';
import type { IdentityProviderTable } from '../src/providers/provider-repository.js';
import { listOauthClients } from '../src/oidc/client-repository.js';
import { startTestApp, type RegisteredUser, type Response, type TestContext } from './support/app.js';
import { auditRows as auditEventsOf } from './support/audit.js';
import { document } from './support/contract.js';
import { expectError, expectUnauthorized } from './support/expect.js';
import { claimsOf } from './support/jwt.js';
import { seedOauthClient } from './support/oauth-clients.js';
import { startOidcUpstream } from './support/oidc-upstream.js';

const MAX_DAYS = 180;
const DAY_MS = 24 * 60 * 60 * 1000;
const KEY_SHAPE = /^ask_[A-Za-z0-9_-]{49}$/;
const REFUSED = 'API keys cannot manage credentials';
/** A bcrypt hash (cost 4), as an import row would carry it. */
const IMPORTED_HASH = '$2b$04$0ZkK6G6UoAZ5m2p1wq3D6O0yV2R7oM8y1u6o3gkR7n3v1s1c9Kx6e';

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/** Every operation of the contract, with the mark that refuses API keys on it. */
const contractOperations = Object.entries<Record<string, any>>(document.paths).flatMap(([path, item]) =>
  Object.entries<Record<string, any>>(item)
    .filter(([method]) => method !== 'parameters')
    .map(([method, op]) => ({ path, method: method.toUpperCase(), id: op.operationId as string, mark: op['x-credential-management'] })),
);

interface Key {
  id: number;
  key: string;
}

function suite(t: () => TestContext) {
  const links = () =>
    t().db.withTables<{
      identity_providers: IdentityProviderTable;
      user_identities: UserIdentityTable;
      provider_flows: ProviderFlowTable;
    }>();
  async function createKey(token: string, body: { name: string; expires_in_days?: number; read_only?: boolean }): Promise<Key> {
    const { data, error, response } = await t().clientFor(token).POST('/api/auth/api-keys', { body });
    if (!data) throw new Error(`key creation failed: ${response.status} ${JSON.stringify(error)}`);
    return { id: data.data.id, key: data.data.key };
  }

  const keyRow = (id: number) => t().db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();

  const auditRows = (subject: number, type: string) => auditEventsOf(t(), subject, type);

  /** The user's own record, read with a key: 200 while the key works. */
  const me = (key: string) => t().clientFor(key).GET('/api/auth/me');

  describe('creation', () => {
    it('shows the key once, recognisable by its prefix and checksum, and stores only its SHA-256', async () => {
      const user = await t().register();
      const { data, response } = await t()
        .clientFor(user.access)
        .POST('/api/auth/api-keys', { body: { name: '  Nightly export ', read_only: true, expires_in_days: 30 } });
      expect(response.status).toBe(201);
      const created = data!.data;
      expect(created.key).toMatch(KEY_SHAPE);
      expect(created).toEqual({
        id: expect.any(Number),
        name: 'Nightly export',
        prefix: created.key.slice(0, 12),
        key: created.key,
        read_only: true,
        created_at: expect.any(String),
        expires_at: expect.any(String),
      });
      expect(Date.parse(created.expires_at) - Date.parse(created.created_at)).toBe(30 * DAY_MS);

      const row = await keyRow(created.id);
      expect(row).toEqual({
        id: created.id,
        user_id: user.id,
        name: 'Nightly export',
        prefix: created.prefix,
        key_hash: sha256(created.key),
        read_only: true,
        created_at: new Date(created.created_at),
        expires_at: new Date(created.expires_at),
        last_used_at: null,
      });
      // Nothing that would serve as the key is kept: only its first 12 characters and its hash.
      expect(JSON.stringify(row)).not.toContain(created.key.slice(12));

      const events = await auditRows(user.id, 'api_key.created');
      expect(events).toEqual([
        expect.objectContaining({
          actor_user_id: user.id,
          details: { api_key_id: created.id, prefix: created.prefix, read_only: true, expires_in_days: 30 },
        }),
      ]);
    });

    it('gives a key 90 days by default and refuses more than API_KEY_MAX_DAYS with a 422 that says so', async () => {
      const user = await t().register();
      const api = t().clientFor(user.access);
      const { data } = await api.POST('/api/auth/api-keys', { body: { name: 'Default' } });
      expect(data!.data.read_only).toBe(false);
      expect(Date.parse(data!.data.expires_at) - Date.parse(data!.data.created_at)).toBe(90 * DAY_MS);
      expect((await api.POST('/api/auth/api-keys', { body: { name: 'At the cap', expires_in_days: MAX_DAYS } })).response.status).toBe(201);

      const above = await t().post('/api/auth/api-keys', { name: 'Too long', expires_in_days: MAX_DAYS + 1 }, { token: user.access });
      expectError(above, 422, 'VALIDATION_ERROR');
      expect(above.body.error.details).toEqual([
        { field: 'body.expires_in_days', message: `must be at most ${MAX_DAYS}: keys of this service live at most that many days` },
      ]);
      for (const body of [
        { name: 'x', expires_in_days: 0 },
        { name: 'x', expires_in_days: 366 },
        { name: ' ' },
        {},
        { name: 'x', key: 'mine' },
      ]) {
        expectError(await t().post('/api/auth/api-keys', body, { token: user.access }), 422, 'VALIDATION_ERROR');
      }
      expect(await t().db.selectFrom('api_keys').select('name').where('user_id', '=', user.id).orderBy('id').execute()).toEqual([
        { name: 'Default' },
        { name: 'At the cap' },
      ]);
    });

    it('holds at most 100 keys per user, expired ones included, and the 101st is a 409 until one is deleted', async () => {
      const user = await t().register();
      const expired = new Date(Date.now() - DAY_MS);
      await t()
        .db.insertInto('api_keys')
        .values(
          Array.from({ length: 99 }, (_, n) => ({
            user_id: user.id,
            name: `Old ${n}`,
            prefix: 'ask_old',
            key_hash: sha256(`old ${user.id} ${n}`),
            expires_at: expired,
          })),
        )
        .execute();
      const hundredth = await createKey(user.access, { name: 'Hundredth' });
      const res = await t().post('/api/auth/api-keys', { name: 'One too many' }, { token: user.access });
      expectError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toBe('A user may hold at most 100 API keys, expired ones included: delete one first');
      expect((await t().clientFor(user.access).GET('/api/auth/api-keys')).data!.data).toHaveLength(100);

      await t().delete(`/api/auth/api-keys/${hundredth.id}`, { token: user.access });
      expect((await t().post('/api/auth/api-keys', { name: 'Room again' }, { token: user.access })).status).toBe(201);
      // Another user is not limited by this one's keys.
      const other = await t().register();
      expect((await t().post('/api/auth/api-keys', { name: 'Mine' }, { token: other.access })).status).toBe(201);
    });
  });

  describe('use', () => {
    it('acts as its user wherever a bearer token is accepted, through the typed client', async () => {
      const user = await t().register();
      const { key } = await createKey(user.access, { name: 'Script' });
      const { data, response } = await me(key);
      expect(response.status).toBe(200);
      expect(data!.data).toMatchObject({ id: user.id, email: user.email });
      // A user's key has a user's rights: the list of users is an admin's.
      expectError(await t().get('/api/users', { token: key }), 403, 'FORBIDDEN');
      const own = await t()
        .clientFor(key)
        .GET('/api/users/{id}', { params: { path: { id: user.id } } });
      expect(own.data!.data.id).toBe(user.id);
    });

    it("gives an admin's key the admin routes", async () => {
      const { key } = await createKey(await t().adminToken(), { name: 'Provisioning' });
      const { data, response } = await t()
        .clientFor(key)
        .GET('/api/users', { params: { query: { per_page: 5 } } });
      expect(response.status).toBe(200);
      expect(data!.meta).toMatchObject({ page: 1, per_page: 5 });
      const audit = await t()
        .clientFor(key)
        .GET('/api/audit-events', { params: { query: { limit: 1 } } });
      expect(audit.response.status).toBe(200);
    });

    it('lists the keys without the secret', async () => {
      const user = await t().register();
      const first = await createKey(user.access, { name: 'First', read_only: true });
      const second = await createKey(user.access, { name: 'Second', expires_in_days: 7 });
      await me(second.key);
      const { data, response } = await t().clientFor(user.access).GET('/api/auth/api-keys');
      expect(response.status).toBe(200);
      const rows = await t().db.selectFrom('api_keys').selectAll().where('user_id', '=', user.id).orderBy('id').execute();
      expect(data!.data).toEqual(
        rows.map((row) => ({
          id: row.id,
          name: row.name,
          prefix: row.prefix,
          read_only: row.read_only,
          created_at: row.created_at.toISOString(),
          expires_at: row.expires_at.toISOString(),
          last_used_at: row.last_used_at?.toISOString() ?? null,
        })),
      );
      expect(data!.data.map((k) => [k.id, k.name, k.prefix])).toEqual([
        [first.id, 'First', first.key.slice(0, 12)],
        [second.id, 'Second', second.key.slice(0, 12)],
      ]);
      const body = JSON.stringify(data);
      for (const { key } of [first, second]) expect(body).not.toContain(key.slice(12));
      // Another user's list has none of them.
      const other = await t().register();
      expect((await t().clientFor(other.access).GET('/api/auth/api-keys')).data!.data).toEqual([]);
    });

    it('records its use in last_used_at, written at most once a minute', async () => {
      const user = await t().register();
      const { id, key } = await createKey(user.access, { name: 'Busy' });
      expect((await keyRow(id))!.last_used_at).toBeNull();
      await me(key);
      const first = (await keyRow(id))!.last_used_at!;
      expect(Math.abs(first.getTime() - Date.now())).toBeLessThan(60_000);

      // Used again within the minute: the row is not written.
      const recent = new Date(Date.now() - 30_000);
      await t().db.updateTable('api_keys').set({ last_used_at: recent }).where('id', '=', id).execute();
      await me(key);
      expect((await keyRow(id))!.last_used_at).toEqual(recent);

      // More than a minute later it is.
      const older = new Date(Date.now() - 90_000);
      await t().db.updateTable('api_keys').set({ last_used_at: older }).where('id', '=', id).execute();
      await me(key);
      expect((await keyRow(id))!.last_used_at!.getTime()).toBeGreaterThan(recent.getTime());
    });

    it('is refused once expired: 401 TOKEN_EXPIRED, and the refusal is not recorded as a use', async () => {
      const user = await t().register();
      const { id, key } = await createKey(user.access, { name: 'Short' });
      await t()
        .db.updateTable('api_keys')
        .set({ expires_at: sql<Date>`now() - interval '1 second'` })
        .where('id', '=', id)
        .execute();
      const res = await t().get('/api/auth/me', { token: key });
      expectError(res, 401, 'TOKEN_EXPIRED');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      expect((await keyRow(id))!.last_used_at).toBeNull();
      // Still listed, so its owner sees it expired.
      const { data } = await t().clientFor(user.access).GET('/api/auth/api-keys');
      expect(data!.data.map((k) => k.id)).toEqual([id]);
    });
  });

  describe('what a key may not do', () => {
    it('a read-only key may GET, and is refused every other method', async () => {
      const user = await t().register();
      const { key } = await createKey(user.access, { name: 'Reader', read_only: true });
      expect((await me(key)).response.status).toBe(200);
      const refused = [
        await t().put(`/api/users/${user.id}`, { name: 'Renamed' }, { token: key }),
        await t().delete(`/api/users/${user.id}`, { token: key }),
        await t().post('/api/auth/verify-email/resend', undefined, { token: key }),
      ];
      for (const res of refused) {
        expectError(res, 403, 'FORBIDDEN');
        expect(res.body.error.message).toBe('This API key is read-only: it may only send GET requests');
      }
      const row = await t().db.selectFrom('users').select(['name', 'deleted_at']).where('id', '=', user.id).executeTakeFirstOrThrow();
      expect(row).toEqual({ name: user.name, deleted_at: null });
      expect((await me(key)).response.status).toBe(200);
    });

    it('a key that may write changes a name, but never an e-mail or a password, own or (as an admin) anyone else’s', async () => {
      const user = await t().register();
      const { key } = await createKey(user.access, { name: 'Writer' });
      const api = t().clientFor(key);
      const renamed = await api.PUT('/api/users/{id}', { params: { path: { id: user.id } }, body: { name: 'Renamed by a script' } });
      expect(renamed.data!.data.name).toBe('Renamed by a script');

      const attempts = [
        { email: 'taken-over@example.com', current_password: user.password },
        { password: 'a-new-password-123', current_password: user.password },
        { name: 'Both', email: 'other@example.com' },
      ];
      for (const body of attempts) {
        const res = await t().put(`/api/users/${user.id}`, body, { token: key });
        expectError(res, 403, 'FORBIDDEN');
        expect(res.body.error.message).toContain(REFUSED);
      }
      const adminKey = await createKey(await t().adminToken(), { name: 'Admin script' });
      expectError(await t().put(`/api/users/${user.id}`, { password: 'set-by-a-key-123' }, { token: adminKey.key }), 403, 'FORBIDDEN');
      expectError(await t().put(`/api/users/${user.id}`, { email: 'set-by-a-key@example.com' }, { token: adminKey.key }), 403, 'FORBIDDEN');
      // The admin's key may still disable and enable (is_active is not a credential).
      const other = await t().register();
      const disabled = await t().put(`/api/users/${other.id}`, { is_active: false }, { token: adminKey.key });
      expect(disabled.status).toBe(200);

      const row = await t().db.selectFrom('users').select(['email', 'pending_email']).where('id', '=', user.id).executeTakeFirstOrThrow();
      expect(row).toEqual({ email: user.email, pending_email: null });
      expect((await t().post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
    });

    it('the contract marks every credential-management operation, and each refuses a key with 403', async () => {
      const marked = contractOperations.filter((op) => op.mark !== undefined);
      expect(marked.map((op) => [op.id, op.mark]).sort()).toEqual(
        [
          ['createApiKey', true],
          ['listApiKeys', true],
          ['deleteApiKey', true],
          ['listFactors', true],
          ['deleteFactor', true],
          ['enrolTotp', true],
          ['confirmTotp', true],
          ['regenerateRecoveryCodes', true],
          ['passkeyRegistrationOptions', true],
          ['registerPasskey', true],
          ['resetUserFactors', true],
          ['listUserSessions', true],
          ['revokeUserSession', true],
          ['changePassword', true],
          ['reauthenticate', true],
          ['updateUser', ['email', 'password', 'role']],
          ['createUser', ['password', 'role']],
          ['importUsers', true],
          ['listIdentityProviders', true],
          ['createIdentityProvider', true],
          ['getIdentityProvider', true],
          ['updateIdentityProvider', true],
          ['deleteIdentityProvider', true],
          ['listOauthClients', true],
          ['createOauthClient', true],
          ['getOauthClient', true],
          ['updateOauthClient', true],
          ['deleteOauthClient', true],
          ['rotateOauthClientSecret', true],
          ['listOauthResources', true],
          ['createOauthResource', true],
          ['getOauthResource', true],
          ['updateOauthResource', true],
          ['deleteOauthResource', true],
          ['listOauthGrants', true],
          ['revokeOauthGrant', true],
          ['logout', true],
          ['listSessions', true],
          ['revokeSession', true],
          ['listIdentities', true],
          ['linkIdentity', true],
          ['unlinkIdentity', true],
        ].sort(),
      );

      // Real targets, so that each refusal is of a request that would otherwise have done its work.
      const user: RegisteredUser = await t().register();
      const victim = await t().register();
      const key = await createKey(user.access, { name: 'Leaked' });
      const adminKey = await createKey(await t().adminToken(), { name: 'Leaked admin key' });
      const pending = await t()
        .clientFor(user.access)
        .POST('/api/auth/mfa/totp', { body: { name: 'Phone' } });
      // An identity of the user's at a registered provider: a key may neither list, add nor remove one.
      const admin = await t().adminToken();
      expect(
        (
          await t().post(
            '/api/identity-providers',
            { slug: 'corp', name: 'Corp', client_id: 'c', issuer: 'http://localhost:9/realm' },
            { token: admin },
          )
        ).status,
      ).toBe(201);
      const provider = await links().selectFrom('identity_providers').selectAll().where('slug', '=', 'corp').executeTakeFirstOrThrow();
      const client = await seedOauthClient(t(), { name: 'Web app', type: 'confidential', redirect_uris: ['http://app.test/callback'] });
      const clientsBefore = await listOauthClients(t().db);
      const resource = (
        await t().post(
          '/api/oauth/resources',
          { indicator: 'https://invoices.example.test', name: 'Invoices', scopes: [] },
          { token: admin },
        )
      ).body.data as { id: number };
      const resourcesBefore = (await t().get('/api/oauth/resources', { token: admin })).body.data;
      const identity = await links()
        .insertInto('user_identities')
        .values({ user_id: user.id, provider_id: provider.id, subject: 'corp-subject-1', email: user.email })
        .returning('id')
        .executeTakeFirstOrThrow();
      const targets: Record<string, { token: string; id?: number | string; ids?: Array<number | string>; body?: unknown }> = {
        createApiKey: { token: key.key, body: { name: 'Another', expires_in_days: 365 } },
        listApiKeys: { token: key.key },
        deleteApiKey: { token: key.key, id: key.id },
        listFactors: { token: key.key },
        deleteFactor: { token: key.key, id: pending.data!.data.factor_id },
        enrolTotp: { token: key.key, body: { name: 'Attacker phone' } },
        confirmTotp: { token: key.key, id: pending.data!.data.factor_id, body: { code: '123456' } },
        regenerateRecoveryCodes: { token: key.key },
        passkeyRegistrationOptions: { token: key.key },
        registerPasskey: { token: key.key, body: { credential: {}, name: 'Attacker key' } },
        resetUserFactors: { token: adminKey.key, id: victim.id },
        listUserSessions: { token: adminKey.key, id: victim.id },
        revokeUserSession: { token: adminKey.key, ids: [victim.id, claimsOf(victim.access).sid] },
        changePassword: { token: key.key, body: { current_password: user.password, new_password: 'attacker-password-1' } },
        reauthenticate: { token: key.key, body: { password: user.password } },
        updateUser: { token: key.key, id: user.id, body: { password: 'attacker-password-1', current_password: user.password } },
        logout: { token: key.key, body: { all: true } },
        listSessions: { token: key.key },
        revokeSession: { token: key.key, id: claimsOf(user.access).sid },
        listIdentities: { token: key.key },
        linkIdentity: {
          token: key.key,
          id: 'corp',
          body: {
            redirect_to: 'http://app.test/settings',
            code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
            code_challenge_method: 'S256',
          },
        },
        unlinkIdentity: { token: key.key, id: identity.id },
        createUser: {
          token: adminKey.key,
          body: { name: 'Made by a key', email: 'made-by-a-key@example.com', password: 'a-key-set-this-1' },
        },
        importUsers: {
          token: adminKey.key,
          body: { users: [{ email: 'imported-by-a-key@example.com', name: 'Imported', password_hash: IMPORTED_HASH }] },
        },
        listIdentityProviders: { token: adminKey.key },
        createIdentityProvider: { token: adminKey.key, body: { slug: 'keyed', client_id: 'c', issuer: 'http://localhost:9/other' } },
        getIdentityProvider: { token: adminKey.key, id: 'corp' },
        updateIdentityProvider: { token: adminKey.key, id: 'corp', body: { issuer: 'http://localhost:9/attacker' } },
        deleteIdentityProvider: { token: adminKey.key, id: 'corp' },
        listOauthClients: { token: adminKey.key },
        createOauthClient: { token: adminKey.key, body: { name: 'Keyed app', type: 'public', redirect_uris: ['http://app.test/keyed'] } },
        getOauthClient: { token: adminKey.key, id: client.id },
        updateOauthClient: { token: adminKey.key, id: client.id, body: { redirect_uris: ['http://attacker.test/callback'] } },
        deleteOauthClient: { token: adminKey.key, id: client.id },
        rotateOauthClientSecret: { token: adminKey.key, id: client.id },
        listOauthResources: { token: adminKey.key },
        createOauthResource: { token: adminKey.key, body: { indicator: 'https://keyed.example.test', name: 'Keyed', scopes: [] } },
        getOauthResource: { token: adminKey.key, id: resource.id },
        updateOauthResource: { token: adminKey.key, id: resource.id, body: { indicator: 'https://attacker.example.test' } },
        deleteOauthResource: { token: adminKey.key, id: resource.id },
        listOauthGrants: { token: key.key },
        // The refusal comes before the grant is looked up, so any well-formed id would do.
        revokeOauthGrant: { token: key.key, id: client.id },
      };
      for (const op of marked) {
        const target = targets[op.id];
        const ids = [...(target.ids ?? [target.id])];
        const path = op.path.replace(/\{[^}]+\}/g, () => String(ids.shift()));
        const res: Response = await t().send(op.method, path, target.body, { token: target.token });
        try {
          expectError(res, 403, 'FORBIDDEN');
          expect(res.body.error.message).toContain(REFUSED);
        } catch (error) {
          throw new Error(`${op.id}: ${res.status} ${JSON.stringify(res.body)}`, { cause: error });
        }
      }

      // Nothing changed: the keys, the session, the pending factor and the password are as they were.
      expect(await t().db.selectFrom('api_keys').select('id').where('user_id', '=', user.id).execute()).toEqual([{ id: key.id }]);
      expect((await t().get('/api/auth/me', { token: user.access })).status).toBe(200);
      expect((await t().get('/api/auth/me', { token: victim.access })).status).toBe(200);
      expect((await t().db.selectFrom('mfa_factors').select('id').where('user_id', '=', user.id).execute()).length).toBe(1);
      expect((await t().post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
      expect(await auditRows(user.id, 'api_key.created')).toHaveLength(1);
      expect(await links().selectFrom('user_identities').select('id').where('user_id', '=', user.id).execute()).toEqual([
        { id: identity.id },
      ]);
      expect(await links().selectFrom('provider_flows').select('id').execute()).toEqual([]);
      expect((await me(key.key)).response.status).toBe(200);
      // Nor did anything that manages sign-in: the provider, the client, the users.
      expect(await links().selectFrom('identity_providers').selectAll().execute()).toEqual([provider]);
      expect(await listOauthClients(t().db)).toEqual(clientsBefore);
      expect((await t().get('/api/oauth/resources', { token: admin })).body.data).toEqual(resourcesBefore);
      const made = await t()
        .db.selectFrom('users')
        .select('email')
        .where('email', 'in', ['made-by-a-key@example.com', 'imported-by-a-key@example.com'])
        .execute();
      expect(made).toEqual([]);
    });

    it("an admin's key cannot register a provider it controls to sign in as the admin, make an admin, or set a password or a role", async () => {
      const adminToken = await t().adminToken();
      const adminId = claimsOf(adminToken).sub;
      const { key } = await createKey(adminToken, { name: 'Leaked admin key' });
      // The attacker's own OpenID provider, which would assert the admin's address, verified.
      const upstream = await startOidcUpstream({
        redirectUris: ['http://localhost/api/auth/providers/evil/callback'],
        accounts: [{ sub: 'attacker', email: 'admin@example.com', email_verified: true }],
      });
      try {
        const created = await t().post(
          '/api/identity-providers',
          { slug: 'evil', name: 'Evil', client_id: upstream.clientId, client_secret: upstream.clientSecret, issuer: upstream.issuer },
          { token: key },
        );
        expectError(created, 403, 'FORBIDDEN');
        expect(created.body.error.message).toContain(REFUSED);
        expect(await links().selectFrom('identity_providers').select('slug').where('slug', '=', 'evil').execute()).toEqual([]);
        // So there is nothing to sign in with.
        const start = await t().get(
          '/api/auth/providers/evil/authorize?redirect_to=http%3A%2F%2Flocalhost%2F&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256',
        );
        expect(start.status).toBe(404);
        expect(upstream.authorizations).toEqual([]);
      } finally {
        await upstream.close();
      }

      const admin = await t().post(
        '/api/users',
        { name: 'Backdoor', email: 'backdoor@example.com', password: 'backdoor-password-1', role: 'admin' },
        { token: key },
      );
      expectError(admin, 403, 'FORBIDDEN');
      expect(admin.body.error.message).toContain(REFUSED);
      expect(await t().db.selectFrom('users').select('id').where('email', '=', 'backdoor@example.com').execute()).toEqual([]);

      const victim = await t().register();
      const userRow = (id: number | string) =>
        t().db.selectFrom('users').select(['role', 'password_hash', 'updated_at']).where('id', '=', Number(id)).executeTakeFirstOrThrow();
      const [victimBefore, adminBefore] = [await userRow(victim.id), await userRow(adminId)];
      for (const body of [{ password: 'taken-over-password-1' }, { role: 'admin' }, { role: 'user', name: 'Demoted' }]) {
        for (const id of [victim.id, adminId]) {
          const res = await t().put(`/api/users/${id}`, body, { token: key });
          expectError(res, 403, 'FORBIDDEN');
          expect(res.body.error.message).toContain(REFUSED);
        }
      }
      expect(await userRow(victim.id)).toEqual(victimBefore);
      expect(await userRow(adminId)).toEqual(adminBefore);
      expect((await t().post('/api/auth/login/json', { email: victim.email, password: victim.password })).status).toBe(200);
      expectError(
        await t().post('/api/auth/login/json', { email: victim.email, password: 'taken-over-password-1' }),
        401,
        'INVALID_CREDENTIALS',
      );
    });

    it('a wrong checksum is refused without a lookup, even when a row has its hash', async () => {
      const user = await t().register();
      const { id, key } = await createKey(user.access, { name: 'Typo' });
      const last = key.at(-1) === 'A' ? 'B' : 'A';
      const tampered = `${key.slice(0, -1)}${last}`;
      const mistyped = `${key.slice(0, 20)}${key[20] === 'x' ? 'y' : 'x'}${key.slice(21)}`;
      // Were the service to look keys up before checking their checksum, these rows would let them in.
      for (const [n, forged] of [tampered, mistyped].entries()) {
        await t()
          .db.insertInto('api_keys')
          .values({
            user_id: user.id,
            name: `forged ${n}`,
            prefix: forged.slice(0, 12),
            key_hash: sha256(forged),
            expires_at: new Date(Date.now() + DAY_MS),
          })
          .execute();
        expectUnauthorized(await t().get('/api/auth/me', { token: forged }));
      }
      for (const token of [key.slice(0, -1), `${key}A`, `ask_${'A'.repeat(49)}`, 'ask_', key.replace('ask_', 'ask-')]) {
        expectUnauthorized(await t().get('/api/auth/me', { token }));
      }
      expect((await me(key)).response.status).toBe(200);
      expect((await keyRow(id))!.last_used_at).not.toBeNull();
    });
  });

  describe('revocation', () => {
    it('a deleted key stops at once; deleting is audited', async () => {
      const user = await t().register();
      const { id, key } = await createKey(user.access, { name: 'Old' });
      expect((await me(key)).response.status).toBe(200);
      const res = await t()
        .clientFor(user.access)
        .DELETE('/api/auth/api-keys/{id}', { params: { path: { id } } });
      expect(res.response.status).toBe(204);
      expectUnauthorized(await t().get('/api/auth/me', { token: key }));
      expect(await keyRow(id)).toBeUndefined();
      const events = await auditRows(user.id, 'api_key.deleted');
      expect(events).toEqual([expect.objectContaining({ actor_user_id: user.id, details: { api_key_id: id, prefix: key.slice(0, 12) } })]);
      expectError(await t().delete(`/api/auth/api-keys/${id}`, { token: user.access }), 404, 'NOT_FOUND');
    });

    it("another user's key is a 404, and keeps working", async () => {
      const owner = await t().register();
      const other = await t().register();
      const { id, key } = await createKey(owner.access, { name: 'Mine' });
      const res = await t().delete(`/api/auth/api-keys/${id}`, { token: other.access });
      expectError(res, 404, 'NOT_FOUND');
      expect(await keyRow(id)).toBeDefined();
      expect((await me(key)).response.status).toBe(200);
    });

    it('disabling the user stops their keys at once, for good, with no event beyond the update', async () => {
      const user = await t().register();
      const { id, key } = await createKey(user.access, { name: 'Worker' });
      const admin = t().clientFor(await t().adminToken());
      await admin.PUT('/api/users/{id}', { params: { path: { id: user.id } }, body: { is_active: false } });
      expectUnauthorized(await t().get('/api/auth/me', { token: key }));
      expect(await keyRow(id)).toBeUndefined();
      await admin.PUT('/api/users/{id}', { params: { path: { id: user.id } }, body: { is_active: true } });
      expectUnauthorized(await t().get('/api/auth/me', { token: key }));
      expect(await auditRows(user.id, 'api_key.deleted')).toEqual([]);
    });

    it('deleting the user stops their keys at once, and a restore brings none back', async () => {
      const user = await t().register();
      const { id, key } = await createKey(user.access, { name: 'Worker' });
      const admin = t().clientFor(await t().adminToken());
      const deleted = await admin.DELETE('/api/users/{id}', { params: { path: { id: user.id } } });
      expect(deleted.response.status).toBe(204);
      expectUnauthorized(await t().get('/api/auth/me', { token: key }));
      expect(await keyRow(id)).toBeUndefined();
      await admin.POST('/api/users/{id}/restore', { params: { path: { id: user.id } } });
      expectUnauthorized(await t().get('/api/auth/me', { token: key }));
      expect(await auditRows(user.id, 'api_key.deleted')).toEqual([]);
    });

    it('a user disabled behind the service’s back (a row changed directly) is refused by the key check itself', async () => {
      const user = await t().register();
      const { key } = await createKey(user.access, { name: 'Worker' });
      await t().db.updateTable('users').set({ is_active: false }).where('id', '=', user.id).execute();
      expectUnauthorized(await t().get('/api/auth/me', { token: key }));
      await t().db.updateTable('users').set({ is_active: true, deleted_at: new Date() }).where('id', '=', user.id).execute();
      expectUnauthorized(await t().get('/api/auth/me', { token: key }));
    });
  });
}

describe('API keys', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp({ API_KEY_MAX_DAYS: String(MAX_DAYS) });
  });
  afterAll(() => t?.close());
  suite(() => t);
});

describe('API_KEY_MAX_DAYS', () => {
  it('must be 1 to 365', () => {
    for (const value of ['0', '366', 'ninety']) {
      expect(() => loadConfig({ API_KEY_MAX_DAYS: value })).toThrow(/API_KEY_MAX_DAYS must be/);
    }
    expect(loadConfig({}).apiKeys.maxDays).toBe(365);
  });

  describe('below the 90-day default', () => {
    let t: TestContext;
    beforeAll(async () => {
      t = await startTestApp({ API_KEY_MAX_DAYS: '30' });
    });
    afterAll(() => t?.close());

    it('is the lifetime of a key created without expires_in_days', async () => {
      const user = await t.register();
      const { data } = await t.clientFor(user.access).POST('/api/auth/api-keys', { body: { name: 'Default' } });
      expect(Date.parse(data!.data.expires_at) - Date.parse(data!.data.created_at)).toBe(30 * DAY_MS);
    });
  });
});
