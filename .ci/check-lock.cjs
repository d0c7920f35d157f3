#!/usr/bin/env node
// Fails unless package-lock.json installs on every platform the service supports: for each package
// that ships native builds as optional per-platform packages, the lock must hold one for each
// platform below, at the version the package asks for. A lock written on one machine can leave the
// others out, and then `npm ci` elsewhere refuses it or installs a package that cannot load.
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const PLATFORMS = [
  { os: 'linux', cpu: 'x64', libc: 'glibc' },
  { os: 'linux', cpu: 'x64', libc: 'musl' },
  { os: 'linux', cpu: 'arm64', libc: 'glibc' },
  { os: 'linux', cpu: 'arm64', libc: 'musl' },
  { os: 'darwin', cpu: 'x64' },
  { os: 'darwin', cpu: 'arm64' },
  { os: 'win32', cpu: 'x64' },
];

const lock = JSON.parse(readFileSync(join(__dirname, '..', 'package-lock.json'), 'utf8'));
const packages = lock.packages ?? {};
const matches = (list, value) => list === undefined || list.includes(value);
const problems = [];
let checked = 0;

/** The entry npm would use for `name` required from the package at `from` (nearest node_modules up). */
function resolve(from, name) {
  let dir = from;
  for (;;) {
    const key = (dir ? `${dir}/` : '') + `node_modules/${name}`;
    if (packages[key]) return packages[key];
    if (!dir) return undefined;
    const at = dir.lastIndexOf('node_modules/');
    dir = at <= 0 ? '' : dir.slice(0, at - 1);
  }
}

for (const [key, entry] of Object.entries(packages)) {
  const optional = Object.entries(entry.optionalDependencies ?? {});
  // Per-platform builds are optional dependencies named after their platform whose lock entries
  // carry `os` or `cpu`; a dependency that is merely optional (fsevents beside rollup) is one of
  // them only when it declares a platform too, and then it must cover every platform.
  const native = optional.filter(([name]) => {
    const dep = resolve(key, name);
    return dep ? dep.os !== undefined || dep.cpu !== undefined : /(linux|darwin|win32)/.test(name);
  });
  if (native.length < 2) continue;
  checked += 1;
  for (const [name, wanted] of native) {
    const dep = resolve(key, name);
    if (!dep) problems.push(`${key}: ${name}@${wanted} is missing from the lock file`);
    else if (dep.version !== wanted) problems.push(`${key}: ${name} is ${dep.version} in the lock file, ${wanted} wanted`);
  }
  for (const platform of PLATFORMS) {
    const found = native.some(([name]) => {
      const dep = resolve(key, name);
      return (
        dep &&
        matches(dep.os, platform.os) &&
        matches(dep.cpu, platform.cpu) &&
        (platform.libc === undefined || matches(dep.libc, platform.libc))
      );
    });
    if (!found)
      problems.push(
        `${key}: no native build for ${platform.os}-${platform.cpu}${platform.libc ? `-${platform.libc}` : ''} in the lock file`,
      );
  }
}

if (problems.length > 0) {
  console.error(`package-lock.json does not install everywhere:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`package-lock.json: ${checked} packages with native builds, each covering ${PLATFORMS.length} platforms`);
