import { readFileSync, statfsSync } from 'node:fs';
import { cp, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, suiteDatabase, type StartOptions, type SuiteDatabase, type TestContext } from './app';

// Most of an embedded app's start goes into PGlite creating its cluster (initdb). That cluster is the
// same every time, so it is created once per PGlite version, kept in /dev/shm (or the temporary
// folder), and copied into a folder of its own for each database. The app still migrates its
// database as it always does.

const PGLITE_PACKAGE = join(__dirname, '..', '..', 'node_modules', '@electric-sql', 'pglite', 'package.json');
const PGLITE_VERSION = (JSON.parse(readFileSync(PGLITE_PACKAGE, 'utf8')) as { version: string }).version;
// In memory where the system offers room for it (a container's /dev/shm is often 64 MB): a cluster
// is some 40 MB, and copying it there is quick.
function inMemoryFolder(): string | undefined {
  try {
    const { bavail, bsize } = statfsSync('/dev/shm');
    return bavail * bsize >= 2 ** 30 ? '/dev/shm' : undefined;
  } catch {
    return undefined;
  }
}
const BASE = inMemoryFolder() ?? tmpdir();
const TEMPLATE = join(BASE, `account-test-pglite-${PGLITE_VERSION}`);

let template: Promise<string> | undefined;

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** The freshly created, empty cluster to copy, made once (by whichever test process gets there first). */
function pgliteTemplate(): Promise<string> {
  template ??= (async () => {
    if (await exists(join(TEMPLATE, 'PG_VERSION'))) return TEMPLATE;
    const staging = await mkdtemp(join(BASE, 'account-test-pglite-staging-'));
    const { PGlite } = await import('@electric-sql/pglite');
    const pglite = await PGlite.create({ dataDir: staging });
    await pglite.close();
    // Another process may have finished first; either copy is as good.
    await rename(staging, TEMPLATE).catch(() => rm(staging, { recursive: true, force: true }));
    return TEMPLATE;
  })();
  return template;
}

/**
 * A fresh, empty database as suiteDatabase(true) gives: on PostgreSQL a new database, on the embedded
 * one a folder of its own, here copied from the created cluster rather than created anew.
 */
export async function freshDatabase(): Promise<SuiteDatabase> {
  if (process.env.TEST_DATABASE_KIND === 'postgres') return suiteDatabase(true);
  const source = await pgliteTemplate();
  const dir = await mkdtemp(join(BASE, 'account-test-'));
  await cp(source, dir, { recursive: true });
  return { env: { DATA_DIR: dir }, drop: () => rm(dir, { recursive: true, force: true }), kind: 'embedded' };
}

/** startTestApp on a fresh database of its own from freshDatabase(); close() drops it as before. */
export async function startFreshApp(env: Record<string, string> = {}, options: Omit<StartOptions, 'persistent'> = {}): Promise<TestContext> {
  if (options.sameDatabaseAs || process.env.TEST_DATABASE_KIND === 'postgres') return startTestApp(env, options);
  const database = await freshDatabase();
  let t: TestContext;
  try {
    t = await startTestApp({ ...env, ...database.env });
  } catch (error) {
    await database.drop();
    throw error;
  }
  const close = t.close;
  return Object.assign(t, {
    database,
    async close() {
      await close();
      await database.drop();
    },
  });
}
