import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { loadConfig } from '../../src/config/index.js';
import { openMigratedDatabase } from '../../src/db/migrate.js';
import { MIGRATIONS_HASH } from './pglite-template.js';

// A test database on PostgreSQL starts as a copy of a template that holds every migration, made once
// per set of migrations (by whichever test process gets there first) and kept on the server: copying
// it is a few file blocks, where running the migrations on each new database took a fifth of a second
// of the server's time and the test's, some 250 times a run. The app still runs its migrations at
// start-up as it always does; on the copy there are none left to run.

const TEMPLATE = `account_test_template_${MIGRATIONS_HASH}`;

let template: Promise<string> | undefined;

async function withClient<T>(serverUrl: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const urlOf = (serverUrl: string, name: string) => {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

/** The migrated template's name, made first if it is not on the server yet. */
function migratedTemplate(serverUrl: string): Promise<string> {
  template ??= (async () => {
    const present = await withClient(serverUrl, (client) =>
      client.query('select 1 from pg_database where datname = $1', [TEMPLATE]).then((result) => result.rowCount === 1),
    );
    if (present) return TEMPLATE;
    // Made under a name of its own and renamed when complete, so that no process copies half of it.
    const staging = `account_test_staging_${process.pid}_${randomBytes(4).toString('hex')}`;
    await withClient(serverUrl, (client) => client.query(`create database ${staging}`));
    const { db } = await openMigratedDatabase(
      loadConfig({ SECRET_KEY: 'template-secret-key-that-is-long-enough', DATABASE_URL: urlOf(serverUrl, staging) }).database,
    );
    await db.destroy();
    await withClient(serverUrl, async (client) => {
      // Another process may have finished first; either is as good.
      await client.query(`alter database ${staging} rename to ${TEMPLATE}`).catch(() => client.query(`drop database ${staging}`));
    });
    return TEMPLATE;
  })();
  return template;
}

/** Creates database `name` on the server: migrated, or `empty` for the tests of the migrations themselves. */
export async function createPostgresDatabase(serverUrl: string, name: string, { empty = false } = {}): Promise<string> {
  const source = empty ? undefined : await migratedTemplate(serverUrl);
  await withClient(serverUrl, (client) => client.query(source ? `create database ${name} template ${source}` : `create database ${name}`));
  return urlOf(serverUrl, name);
}
