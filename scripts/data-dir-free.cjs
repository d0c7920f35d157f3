// `make run` runs this before it builds: while a server holds the embedded database's folder, a second
// start would be refused only after the build, so it is refused here at once, in the server's words
// (src/db/data-dir-lock.ts). Plain JavaScript with no dependency, so that it runs before anything is
// installed; DATA_DIR and DATABASE_URL come from the environment, else from .env as the server reads it.
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

/** A setting from the environment, else from `.env` (KEY=value lines, the value optionally quoted). */
function setting(name) {
  const value = process.env[name];
  if (value !== undefined && value.trim() !== '') return value.trim();
  let text;
  try {
    text = readFileSync('.env', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const raw = match[2].trim();
    const quoted = /^(['"`])(.*)\1$/.exec(raw);
    const found = quoted ? quoted[2] : raw.replace(/\s+#.*$/, '');
    return found.trim() === '' ? undefined : found.trim();
  }
  return undefined;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

if (setting('DATABASE_URL') === undefined) {
  const dataDir = setting('DATA_DIR') ?? './data';
  let pid;
  try {
    pid = Number(readFileSync(join(dataDir, '.lock'), 'utf8').trim());
  } catch {
    pid = undefined;
  }
  if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
    process.stderr.write(
      `DATA_DIR ${dataDir} is in use by process ${pid}; the embedded database serves one process; use DATABASE_URL for several\n`,
    );
    process.exit(1);
  }
}
