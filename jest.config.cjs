const { availableParallelism } = require('node:os');

const PART = process.env.TEST_PART;

/** @type {import('jest').Config} */
const common = {
  testEnvironment: 'node',
  // The sources are ES modules, and so are the tests: swc strips the types and keeps the imports.
  // `with { type: 'json' }` is kept: Node's loader (and Jest's) asks for it on a JSON module.
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { target: 'es2022', parser: { syntax: 'typescript' }, experimental: { keepImportAttributes: true } },
        module: { type: 'es6' },
      },
    ],
  },
  extensionsToTreatAsEsm: ['.ts'],
  // The sources import each other as `./x.js`, the compiled file's name; here it is the TypeScript file.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  // `make test` runs the timing tests after the rest, alone: TEST_PART=main leaves them out, and
  // TEST_PART=timing runs them only. (Set here, not on the command line: a pattern given there
  // replaces each project's own.)
  testMatch: [PART === 'timing' ? '<rootDir>/test/**/*.timing.test.ts' : '<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...(PART === 'main' ? ['\\.timing\\.test\\.ts$'] : [])],
  moduleFileExtensions: ['ts', 'js', 'json'],
};

// Files that open no database at all (they read the contract, the docs or the configuration, or
// build the HTTP layer on operations of their own): the same on either database, so they run once, in
// the embedded project. A file that starts an app or a server does not belong here.
const WITHOUT_DATABASE = [
  'api-table',
  'config',
  'container',
  'contract-patterns',
  'docs-links',
  'openapi-backend-overrides',
  'redirects',
].map((name) => `<rootDir>/test/${name}\\.test\\.ts$`);

// The whole suite runs on the embedded database, and again on PostgreSQL when TEST_DATABASE_URL is set.
const projects = [{ ...common, displayName: 'embedded', setupFiles: ['<rootDir>/test/support/use-embedded.cjs'] }];
if (process.env.TEST_DATABASE_URL) {
  projects.push({
    ...common,
    displayName: 'postgres',
    setupFiles: ['<rootDir>/test/support/use-postgres.cjs'],
    testPathIgnorePatterns: [...common.testPathIgnorePatterns, ...WITHOUT_DATABASE],
  });
}

module.exports = {
  projects,
  testTimeout: 60000,
  // Two workers per core: a test file spends much of its time waiting (on the server processes,
  // browsers and mail servers it starts, on PostgreSQL, on timers), and the other files fill those
  // waits. With three workers on two cores, the suite's processes used about 1.5 of the 2 cores.
  // (A count, not '200%': Jest reads a percentage above 100 as a number of workers.)
  maxWorkers: Math.max(2, availableParallelism() * 2),
  // package.json's `test` gives every Jest process a young generation of 32 MB a half
  // (--max-semi-space-size): loading each file's modules anew allocates a great deal, and V8's default
  // young generation made the suite's processes use some 9 % more CPU time, mostly collecting garbage.
  // A worker keeps what every test file it ran left behind (each embedded database's WebAssembly
  // memory among it) and slows down as its heap grows; past this after a file, it is replaced.
  workerIdleMemoryLimit: '800MB',
  // Longest files first, from the durations kept in test/support/durations.json.
  testSequencer: '<rootDir>/test/support/sequencer.cjs',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.cjs'],
};
