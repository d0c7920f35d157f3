const { existsSync, readFileSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/**
 * The order test files start in: longest first, so that no long file starts last and keeps the run
 * going on one worker while the others have nothing left. Jest's own order needs timings from an
 * earlier run in its cache folder, which a fresh checkout (CI) does not have: it then goes by file
 * size, and sizes say little here (a short file can start several servers). The seconds each file took
 * per project are kept in durations.json beside this file; a file not listed there yet is placed by
 * its size, at the suite's seconds per byte.
 *
 * `JEST_DURATIONS_FILE=test/support/durations.json npm test` writes the seconds the run measured there.
 */
const ROOT = join(__dirname, '..', '..');
const DURATIONS = join(__dirname, 'durations.json');

function readDurations(file = DURATIONS) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

const projectOf = (test) => test.context.config.displayName?.name ?? 'default';
const fileOf = (test) => relative(ROOT, test.path);

class LongestFirst extends Sequencer {
  sort(tests) {
    const durations = readDurations();
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    const known = tests.filter((test) => durations[projectOf(test)]?.[fileOf(test)] !== undefined);
    const secondsPerByte =
      known.reduce((sum, test) => sum + durations[projectOf(test)][fileOf(test)], 0) /
      Math.max(
        1,
        known.reduce((sum, test) => sum + size(test), 0),
      );
    const estimate = (test) => durations[projectOf(test)]?.[fileOf(test)] ?? size(test) * (secondsPerByte || 1e-3);
    return [...tests].sort((a, b) => estimate(b) - estimate(a));
  }

  cacheResults(tests, results) {
    super.cacheResults(tests, results);
    const file = process.env.JEST_DURATIONS_FILE;
    if (!file) return;
    // What an earlier run into the same file wrote (`make test` runs jest twice), else the kept ones.
    const durations = readDurations(existsSync(file) ? file : DURATIONS);
    const byPath = new Map(tests.map((test) => [test.path, test]));
    for (const result of results.testResults) {
      const test = byPath.get(result.testFilePath);
      if (!test || result.skipped) continue;
      const project = projectOf(test);
      durations[project] ??= {};
      durations[project][fileOf(test)] = Math.round((result.perfStats.end - result.perfStats.start) / 100) / 10;
    }
    const sorted = Object.fromEntries(
      Object.entries(durations)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([project, files]) => [project, Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)))]),
    );
    writeFileSync(file, `${JSON.stringify(sorted, null, 2)}\n`);
  }
}

module.exports = LongestFirst;
