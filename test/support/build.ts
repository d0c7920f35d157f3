import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, watch } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { promisify } from 'node:util';

// The real build (`tsc -p tsconfig.build.json`), which the tests of the built command line and of the
// package export run. The compiler takes some 12 s of CPU, so it runs once per version of what it
// compiles: the first test process to ask builds into the temporary folder, the others wait for that
// build and read it. Nothing writes into a build once it is made.

const ROOT = join(import.meta.dirname, '..', '..');
const INPUTS = [
  'src',
  'migrations',
  'generated',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
  'test/support/build.ts',
];

function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name)));
}

/** What the build depends on, hashed: a build is only reused by the checkout and sources that made it. */
export function sourcesHash(inputs: string[] = INPUTS, keep: (path: string) => boolean = () => true): string {
  // The checkout too: a build links to its checkout's node_modules.
  const hash = createHash('sha256').update(`${ROOT}\0`);
  for (const file of inputs.flatMap((input) => filesUnder(join(ROOT, input))).filter(keep)) {
    hash
      .update(`${relative(ROOT, file)}\0`)
      .update(readFileSync(file))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function compile(outDir: string): Promise<void> {
  await promisify(execFile)(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', outDir],
    { cwd: ROOT },
  ).catch(() => undefined); // type errors elsewhere still emit; the callers check the files they need
}

let built: Promise<string> | undefined;

/**
 * The folder holding the compiled sources (`src/…`, `migrations/…`, `generated/…`), built once for
 * these sources. Read it, never write into it: copy it where a test needs to add files.
 */
export function builtSources(): Promise<string> {
  built ??= buildOnce(`account-test-build-${sourcesHash()}`, async (staging) => {
    await compile(staging);
    // The compiled files are ES modules, as the package says, and find the project's packages.
    await writeFile(join(staging, 'package.json'), JSON.stringify({ type: 'module' }));
    await symlink(join(ROOT, 'node_modules'), join(staging, 'node_modules'), 'dir');
  });
  return built;
}

let consoleBuilt: Promise<string> | undefined;

/**
 * The console built by Vite (as `make build` builds it) for these sources, once per run and shared
 * by every test process: the folder to give the service as CONSOLE_DIR.
 */
export function builtConsole(): Promise<string> {
  const inputs = ['console', 'generated', 'package-lock.json', 'test/support/build.ts'];
  consoleBuilt ??= buildOnce(
    `account-test-console-${sourcesHash(inputs, (path) => !path.includes(`${join('console', 'dist')}`))}`,
    (staging) =>
      promisify(execFile)(
        process.execPath,
        [
          join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'),
          'build',
          '--config',
          join(ROOT, 'console', 'vite.config.ts'),
          '--outDir',
          staging,
          '--emptyOutDir',
          '--logLevel',
          'warn',
        ],
        { cwd: ROOT },
      ).then(() => undefined),
  );
  return consoleBuilt;
}

/**
 * Makes `name` in the temporary folder with `make` (into a staging folder, renamed into place when
 * complete), unless it is there already: the first test process to ask builds, the others wait for
 * that build and read it. Nothing writes into a build once it is made.
 */
export async function buildOnce(name: string, make: (staging: string) => Promise<void>): Promise<string> {
  const dir = join(tmpdir(), name);
  const lock = `${dir}.lock`;
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (await exists(join(dir, '.complete'))) return dir;
    // The lock is a folder: making it is atomic, so exactly one process builds.
    const mine = await mkdir(lock).then(
      () => true,
      () => false,
    );
    if (mine) {
      try {
        await writeFile(join(lock, 'pid'), String(process.pid));
        const staging = await mkdtemp(join(tmpdir(), `${name}-staging-`));
        await make(staging);
        await writeFile(join(staging, '.complete'), '');
        await rename(staging, dir).catch(() => rm(staging, { recursive: true, force: true }));
      } finally {
        await rm(lock, { recursive: true, force: true });
      }
      continue;
    }
    // Another process is building; a lock whose process is gone is taken over.
    const holder = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => ''));
    if (holder && !alive(holder)) await rm(lock, { recursive: true, force: true });
    if (Date.now() > deadline) throw new Error(`no build appeared in ${dir} within 5 minutes`);
    // Its build appears, or its lock goes, as an entry of the temporary folder; whether its process
    // is still alive is looked at again every few seconds.
    await entryChanges(tmpdir(), [basename(dir), basename(lock)], 5_000, async () => !(await exists(lock)));
  }
}

/**
 * Resolves when one of `names` is made, renamed or removed in `folder`, when `already` says the
 * awaited change came before the watch began, or after `atMostMs`.
 */
function entryChanges(folder: string, names: string[], atMostMs: number, already: () => Promise<boolean>): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(folder, (_event, name) => {
      if (name !== null && names.includes(String(name))) done();
    });
    const timer = setTimeout(done, atMostMs);
    function done(): void {
      clearTimeout(timer);
      watcher.close();
      resolve();
    }
    void already().then((yes) => yes && done());
  });
}
