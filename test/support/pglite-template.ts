import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { appendFile, cp, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config/index.js';
import { openMigratedDatabase } from '../../src/db/migrate.js';

// Most of an embedded app's start goes into PGlite creating its cluster (initdb), and then into the
// migrations. Both give the same result every time, so two clusters are made once per PGlite version
// and set of migrations, kept in /dev/shm (or the temporary folder), and copied into a folder of its
// own for each database: the created, empty cluster, and the same with every migration applied. The
// app still runs its migrations at start-up as it always does; on the migrated copy there are none
// left to run.

const PGLITE_PACKAGE = join(import.meta.dirname, '..', '..', 'node_modules', '@electric-sql', 'pglite', 'package.json');
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

/**
 * Appended to each test cluster's postgresql.conf. PostgreSQL zeroes its shared memory as it starts,
 * and PGlite starts at every open: with initdb's 128 MB of shared buffers, that memset was the largest
 * single cost of opening a database, and each open database held the memory. A test database is a few
 * megabytes; 16 MB of buffers holds it whole. What the SQL does is the same.
 */
const TEST_SETTINGS = ['shared_buffers = 16MB'];
const SETTINGS_HASH = createHash('sha256').update(TEST_SETTINGS.join('\n')).digest('hex').slice(0, 8);
const TEMPLATE = join(BASE, `account-test-pglite-${PGLITE_VERSION}-${SETTINGS_HASH}`);
const MIGRATIONS_DIR = join(import.meta.dirname, '..', '..', 'migrations');
/** The migrations' sources, hashed: a migrated template is only reused by the code that made it. */
export const MIGRATIONS_HASH = createHash('sha256')
  .update(
    readdirSync(MIGRATIONS_DIR)
      .sort()
      .map((name) => `${name}\0${readFileSync(join(MIGRATIONS_DIR, name), 'utf8')}`)
      .join('\0'),
  )
  .digest('hex')
  .slice(0, 16);
const MIGRATED_TEMPLATE = `${TEMPLATE}-migrated-${MIGRATIONS_HASH}`;

let template: Promise<string> | undefined;
let migratedTemplate: Promise<string> | undefined;

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
    await appendFile(
      join(staging, 'postgresql.conf'),
      `\n# The test suite's (test/support/pglite-template.ts)\n${TEST_SETTINGS.join('\n')}\n`,
    );
    // Another process may have finished first; either copy is as good.
    await rename(staging, TEMPLATE).catch(() => rm(staging, { recursive: true, force: true }));
    return TEMPLATE;
  })();
  return template;
}

/** The created cluster with every migration applied, made once (by whichever test process gets there first). */
function migratedPgliteTemplate(): Promise<string> {
  migratedTemplate ??= (async () => {
    if (await exists(join(MIGRATED_TEMPLATE, 'PG_VERSION'))) return MIGRATED_TEMPLATE;
    const staging = await mkdtemp(join(BASE, 'account-test-pglite-staging-'));
    await cp(await pgliteTemplate(), staging, { recursive: true });
    const { db } = await openMigratedDatabase(
      loadConfig({ SECRET_KEY: 'template-secret-key-that-is-long-enough', DATA_DIR: staging }).database,
    );
    await db.destroy();
    await rename(staging, MIGRATED_TEMPLATE).catch(() => rm(staging, { recursive: true, force: true }));
    return MIGRATED_TEMPLATE;
  })();
  return migratedTemplate;
}

/**
 * Copies a cluster's 1,200 files: the system's `cp` takes some 40 ms of CPU for it, Node's own
 * recursive copy ten times that (and every embedded app a suite starts begins with one). Node's is
 * the fallback where there is no `cp`.
 */
async function copyFolder(source: string, target: string): Promise<void> {
  try {
    await promisify(execFile)('cp', ['-R', `${source}/.`, target]);
  } catch {
    await cp(source, target, { recursive: true, force: true });
  }
}

/**
 * A folder of its own holding a copy of the created cluster, with every migration applied unless
 * `empty` (for the tests of the migrations themselves); `drop` removes it.
 */
export async function copyOfCluster({ empty = false } = {}): Promise<{ dir: string; drop: () => Promise<void> }> {
  const source = await (empty ? pgliteTemplate() : migratedPgliteTemplate());
  const dir = await mkdtemp(join(BASE, 'account-test-'));
  copies.add(dir);
  await copyFolder(source, dir);
  return {
    dir,
    drop: async () => {
      await rm(dir, { recursive: true, force: true });
      copies.delete(dir);
    },
  };
}

/** Copies not dropped yet; a test file that never closes its app still leaves nothing behind in memory. */
const copies = new Set<string>();
process.on('exit', () => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});
