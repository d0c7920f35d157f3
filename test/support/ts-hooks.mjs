// Module hooks for ts-register.mjs (they run on the loader's thread).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync, version } from '@swc/core';

export async function resolve(specifier, context, nextResolve) {
  if ((specifier.startsWith('./') || specifier.startsWith('../')) && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
    const url = new URL(specifier, context.parentURL);
    if (!existsSync(fileURLToPath(url))) {
      const ts = new URL(specifier.replace(/\.js$/, '.ts'), context.parentURL);
      if (existsSync(fileURLToPath(ts))) return { url: ts.href, shortCircuit: true, format: 'module' };
    }
  }
  return nextResolve(specifier, context);
}

// Every process started from the sources compiles the same files: the test suite starts dozens
// (servers, cluster workers, command lines), and compiling took about as long as the rest of a start.
// Each file's output is kept in the temporary folder under a hash of its name, its text and the
// compiler's version, so that a changed file is compiled again and an unchanged one is read.
const CACHE = join(tmpdir(), 'account-ts-cache');
const OPTIONS = { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'es6' }, sourceMaps: 'inline' };
const OPTIONS_KEY = `${version}\0${JSON.stringify(OPTIONS)}`;
let cacheReady = false;

function compile(filename, source) {
  const key = createHash('sha256').update(`${OPTIONS_KEY}\0${filename}\0`).update(source).digest('hex');
  const cached = join(CACHE, `${key}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    // not compiled yet
  }
  const { code } = transformSync(source, { filename, ...OPTIONS });
  try {
    if (!cacheReady) mkdirSync(CACHE, { recursive: true });
    cacheReady = true;
    // Written aside and renamed, so that another process never reads half a file.
    const staging = `${cached}.${process.pid}`;
    writeFileSync(staging, code);
    renameSync(staging, cached);
  } catch {
    // a read-only or full temporary folder: compile every time
  }
  return code;
}

export async function load(url, context, nextLoad) {
  if (!url.endsWith('.ts')) return nextLoad(url, context);
  const filename = fileURLToPath(url);
  return { format: 'module', source: compile(filename, readFileSync(filename, 'utf8')), shortCircuit: true };
}
