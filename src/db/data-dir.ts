import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The major version of PostgreSQL that the embedded database (PGlite) runs, as its PG_VERSION file says. */
export const EMBEDDED_POSTGRES_MAJOR = '17';

/** The file in DATA_DIR holding the secret development uses when SECRET_KEY is not set. */
export const SECRET_KEY_FILE = 'secret-key';

/** What the service itself keeps in DATA_DIR besides the database, and what a mounted volume holds from the start. */
const OWN_ENTRIES = new Set(['.lock', SECRET_KEY_FILE, 'lost+found']);

/** The characters of a kept key, 64 random bytes in base64url. */
const KEY_PATTERN = /^[A-Za-z0-9_-]{86}$/;

/** DATA_DIR cannot serve as the embedded database's folder: the message names it and says what to do. */
export class DataDirRefused extends Error {}

/**
 * Makes sure `dataDir` is a folder this service may keep its files in, creating it when missing: a
 * new or empty folder, or one holding the embedded database of this PostgreSQL version. Any other
 * folder (a home folder, another program's files, another PostgreSQL's database) is refused rather
 * than filled with a database.
 */
export function prepareDataDir(dataDir: string): void {
  let entries: string[];
  try {
    mkdirSync(dataDir, { recursive: true });
    entries = readdirSync(dataDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') throw new DataDirRefused(`DATA_DIR ${dataDir} is a file; set DATA_DIR to a folder`);
    throw new DataDirRefused(`DATA_DIR ${dataDir} cannot be used (${code ?? String(error)}); set DATA_DIR to a folder this user may write`);
  }
  if (entries.includes('PG_VERSION')) {
    const version = readText(join(dataDir, 'PG_VERSION'))?.trim() ?? '';
    if (version === EMBEDDED_POSTGRES_MAJOR) return;
    const what = /^\d+$/.test(version) ? `a PostgreSQL ${version} database` : 'a damaged database (its PG_VERSION is unreadable)';
    throw new DataDirRefused(
      `DATA_DIR ${dataDir} holds ${what}, and the embedded database is PostgreSQL ${EMBEDDED_POSTGRES_MAJOR}; ` +
        'set DATA_DIR to a new folder (or DATABASE_URL to a PostgreSQL server that can open it)',
    );
  }
  const foreign = entries.filter((name) => !OWN_ENTRIES.has(name));
  if (foreign.length > 0) {
    throw new DataDirRefused(
      `DATA_DIR ${dataDir} is not a data folder of this service (it holds ${describeEntries(foreign)}); ` +
        'set DATA_DIR to a new or empty folder',
    );
  }
}

/** Why PGlite could not open the database in `dataDir`, in the operator's terms rather than the library's. */
export function unreadableDataDir(dataDir: string, cause: unknown): DataDirRefused {
  return new DataDirRefused(
    `DATA_DIR ${dataDir} could not be opened as the embedded database: its files are damaged or were written by another program; ` +
      'restore the folder from a backup, or set DATA_DIR to a new folder',
    { cause },
  );
}

/**
 * The secret development signs and seals with when SECRET_KEY is not set: made once, on the first
 * start, and kept in DATA_DIR (readable by this user only), so that tokens, second factors and
 * client secrets survive a restart and the command line seals with the same key as the server.
 */
export function keptSecretKey(dataDir: string): string {
  prepareDataDir(dataDir);
  const path = join(dataDir, SECRET_KEY_FILE);
  try {
    // Created exclusively: of two processes starting at once, both read the key the first one wrote.
    const fd = openSync(path, 'wx', 0o600);
    try {
      writeSync(fd, `${randomBytes(64).toString('base64url')}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new DataDirRefused(`DATA_DIR ${dataDir}: ${SECRET_KEY_FILE} cannot be written (${(error as NodeJS.ErrnoException).code})`);
    }
  }
  const key = readText(path)?.trim() ?? '';
  if (!KEY_PATTERN.test(key)) {
    throw new DataDirRefused(
      `DATA_DIR ${dataDir}: ${SECRET_KEY_FILE} is damaged; set SECRET_KEY, or delete the file to make a new key ` +
        '(sessions, second factors and client secrets sealed with the old one stop working)',
    );
  }
  return key;
}

function readText(path: string): string | undefined {
  try {
    return statSync(path).isFile() ? readFileSync(path, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

function describeEntries(names: string[]): string {
  const shown = names
    .sort()
    .slice(0, 3)
    .map((name) => `"${name}"`);
  return names.length > 3 ? `${shown.join(', ')} and ${names.length - 3} more` : shown.join(', ');
}
