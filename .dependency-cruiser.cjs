/**
 * The import graph of src/, as STYLE.md draws it: requests flow http -> handlers -> services -> db,
 * nothing imports in a circle, and the domain errors depend on nothing. `make check-imports` runs it.
 * Type-only imports count: a type is as much a dependency as a value.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A circle of imports makes every module in it depend on all the others.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'db-stays-below',
      severity: 'error',
      comment: 'Repositories and the transaction helper know tables, not rules, handlers or HTTP.',
      from: { path: '^src/db/' },
      to: { path: '^src/(services|handlers|http)/' },
    },
    {
      name: 'services-know-no-edge',
      severity: 'error',
      comment: 'Rules throw domain errors (src/errors.ts) and return data; the HTTP layer and handlers translate them.',
      from: { path: '^src/services/' },
      to: { path: '^src/(handlers|http)/' },
    },
    {
      name: 'handlers-know-no-http',
      severity: 'error',
      comment: 'Handlers return replies as data; only the HTTP layer imports handlers, never the other way.',
      from: { path: '^src/handlers/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'errors-is-a-leaf',
      severity: 'error',
      comment: 'Domain errors are imported by every layer, so they import nothing of the service.',
      from: { path: '^src/errors\\.ts$' },
      to: { path: '^src/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['cjs', 'es6'],
  },
};
