#!/usr/bin/env bash
# `npm ci` must accept the lock file as committed, from a checkout with no node_modules, and the lock
# must hold a native build of each native package for every supported platform (.ci/check-lock.cjs).
set -euo pipefail
cd "$(dirname "$0")/.."
node .ci/check-lock.cjs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp package.json package-lock.json .npmrc "$tmp"/
if ! (cd "$tmp" && npm ci --dry-run --ignore-scripts --no-audit --no-fund >"$tmp/npm-ci.log" 2>&1); then
  grep -v 'Unknown user config' "$tmp/npm-ci.log" >&2 || true
  echo 'npm ci refuses package-lock.json: regenerate it (npm install) and commit it' >&2
  exit 1
fi
echo 'npm ci accepts package-lock.json from a clean checkout'
