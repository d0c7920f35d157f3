import { readFileSync, rmSync, statfsSync } from 'node:fs';
import { cp, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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

/** A folder of its own holding a copy of the created, empty cluster; `drop` removes it. */
export async function copyOfEmptyCluster(): Promise<{ dir: string; drop: () => Promise<void> }> {
  const source = await pgliteTemplate();
  const dir = await mkdtemp(join(BASE, 'account-test-'));
  copies.add(dir);
  await cp(source, dir, { recursive: true });
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
