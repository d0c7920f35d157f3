import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Another live process has the embedded database open. */
export class DataDirInUse extends Error {
  constructor(dataDir: string, pid: number) {
    super(`DATA_DIR ${dataDir} is in use by process ${pid}; the embedded database serves one process; use DATABASE_URL for several`);
  }
}

/** Releases a lock taken by `lockDataDir`. */
export type Unlock = () => void;

const POLL_MS = 100;

/** Open counts per lock file of this process: several databases of one process may share a folder (tests reopen one). */
const held = new Map<string, number>();

/**
 * Takes `DATA_DIR/.lock` for this process: created exclusively and holding the pid, so a second
 * process on the folder finds it. A lock whose process is gone (killed, crashed) is taken over.
 * With `waitMs`, a live holder is waited for that long (checked every 100 ms, `onWait` told once);
 * then, or at once without it, `DataDirInUse` is thrown.
 */
export async function lockDataDir(dataDir: string, waitMs = 0, onWait?: (pid: number) => void): Promise<Unlock> {
  const path = join(dataDir, '.lock');
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    const holder = tryLock(path);
    if (holder === undefined) break;
    if (Date.now() >= deadline) throw new DataDirInUse(dataDir, holder);
    if (!told) onWait?.(holder);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  held.set(path, (held.get(path) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const count = (held.get(path) ?? 1) - 1;
    if (count > 0) return void held.set(path, count);
    held.delete(path);
    if (readPid(path) === process.pid) unlinkQuietly(path);
  };
}

/** Undefined once the lock is ours; otherwise the pid of the live process that holds it. */
function tryLock(path: string): number | undefined {
  for (;;) {
    try {
      const fd = openSync(path, 'wx');
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      return undefined;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = readPid(path);
    if (pid === process.pid) return undefined;
    if (pid !== undefined && isAlive(pid)) return pid;
    // Left by a process that is gone (or half written by one that died at once): take it over.
    unlinkQuietly(path);
  }
}

function readPid(path: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
