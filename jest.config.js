/** @type {import('jest').Config} */
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  moduleFileExtensions: ['ts', 'js', 'json'],
};

// The whole suite runs on the embedded database, and again on PostgreSQL when TEST_DATABASE_URL is set.
const projects = [{ ...common, displayName: 'embedded', setupFiles: ['<rootDir>/test/support/use-embedded.js'] }];
if (process.env.TEST_DATABASE_URL) {
  projects.push({ ...common, displayName: 'postgres', setupFiles: ['<rootDir>/test/support/use-postgres.js'] });
}

module.exports = {
  projects,
  testTimeout: 60000,
  maxWorkers: '100%',
  // A worker keeps what every test file it ran left behind (each embedded database's WebAssembly
  // memory among it) and slows down as its heap grows; past this after a file, it is replaced.
  workerIdleMemoryLimit: '800MB',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
