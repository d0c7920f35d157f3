import { randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { preparingPool } from '../src/db/prepared.js';
import type { Database } from '../src/db/types.js';
import {
  ANY_TOKEN,
  consumeOidcRecord,
  findTokenRecordsWithRelated,
  upsertOidcRecord,
  type OidcRecord,
} from '../src/oidc/record-repository.js';
import { suiteDatabase, type SuiteDatabase } from './support/app.js';

// The provider's statements that nearly every request about a token runs are prepared once per
// connection, and PostgreSQL must also plan them once: a statement it plans again on every call
// costs it several times the statement's own work. PostgreSQL plans a prepared statement for its
// first five calls' values and then keeps one plan for all values, unless that plan looks dearer
// than the ones made per call. These run each statement on one connection and read, on that same
// connection, how PostgreSQL planned it.

const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres' ? describe : describe.skip;

onPostgres('the provider’s hot statements on PostgreSQL', () => {
  let database: SuiteDatabase;
  let pool: Pool;
  let db: Kysely<Database>;

  beforeAll(async () => {
    database = await suiteDatabase();
    pool = new Pool({ connectionString: database.env.DATABASE_URL, max: 1 });
    db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
    // A table of some size, its statistics known, as PostgreSQL sees it in service: on a few rows
    // every plan costs alike, and the one kept for all values would be chosen whatever its form.
    await pool.query(
      `insert into oidc_records (model, id, payload, grant_id, client_id, expires_at)
       select (array['AccessToken', 'RefreshToken', 'Grant', 'ClientCredentials'])[1 + g % 4], md5(g::text),
              jsonb_build_object('jti', md5(g::text)), md5((g / 4)::text), 'app', now() + interval '1 hour'
       from generate_series(1, 5000) g`,
    );
    await pool.query('analyze oidc_records');
  });
  afterAll(async () => {
    await db.destroy();
    await database.drop();
  });

  const record = (model: string, id: string, grantId: string | null): OidcRecord => ({
    model,
    id,
    payload: { jti: id, kind: model, ...(grantId ? { grantId } : {}), exp: Math.floor(Date.now() / 1000) + 3600 },
    grantId,
    uid: null,
    sessionUid: null,
    userCode: null,
    userId: null,
    clientId: 'app',
    serviceSessionId: undefined,
    expiresAt: new Date(Date.now() + 3_600_000),
  });

  /** How PostgreSQL has planned the prepared statement `name` on the pool's one connection. */
  async function plans(name: string): Promise<{ generic: number; custom: number }> {
    const { rows } = await pool.query<{ generic_plans: string; custom_plans: string }>(
      'select generic_plans, custom_plans from pg_prepared_statements where name = $1',
      [name],
    );
    expect(rows).toHaveLength(1);
    return { generic: Number(rows[0].generic_plans), custom: Number(rows[0].custom_plans) };
  }

  const CALLS = 12;

  it('plans the reads of a token with its related records once, whichever kinds of token are asked for', async () => {
    const grantId = randomUUID();
    await upsertOidcRecord(db, record('Grant', grantId, null));
    const ids = Array.from({ length: CALLS }, () => randomUUID());
    for (const id of ids) await upsertOidcRecord(db, record(id.startsWith('a') ? 'RefreshToken' : 'AccessToken', id, grantId));

    for (const id of ids) {
      const model = id.startsWith('a') ? 'RefreshToken' : 'AccessToken';
      const [one] = await findTokenRecordsWithRelated(db, model, id);
      expect(one).toMatchObject({ model, grant_id: grantId, grant_payload: { jti: grantId } });
      const [any] = await findTokenRecordsWithRelated(db, ANY_TOKEN, id);
      expect(any).toMatchObject({ model, payload: { jti: id } });
    }

    for (const name of ['oidc_token_with_related', 'oidc_any_token_with_related']) {
      const planned = await plans(name);
      expect({ name, ...planned }).toEqual({ name, generic: CALLS - 5, custom: 5 });
    }
  });

  it('plans the saving and the consuming of a record once', async () => {
    const ids = Array.from({ length: CALLS }, () => randomUUID());
    for (const id of ids) await upsertOidcRecord(db, record('AuthorizationCode', id, null));
    for (const id of ids) await consumeOidcRecord(db, 'AuthorizationCode', id);
    const { rows } = await pool.query<{ n: string }>(
      "select count(*) as n from oidc_records where model = 'AuthorizationCode' and id = any($1) and consumed_at is not null",
      [ids],
    );
    expect(Number(rows[0].n)).toBe(CALLS);
    expect((await plans('oidc_record_consume')).custom).toBeLessThanOrEqual(5);
    expect((await plans('oidc_record_upsert')).custom).toBeLessThanOrEqual(5);
  });
});
