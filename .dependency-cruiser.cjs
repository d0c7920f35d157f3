/**
 * The import graph of src/, as STYLE.md draws it: requests flow http -> handlers -> a capability's rules
 * -> its repositories, nothing imports in a circle, and the domain errors depend on nothing. Each
 * capability is a folder of src/ (sessions/, users/, mfa/, oidc/...) holding its rules beside its
 * repositories (`*-repository.ts`); src/db/ holds the shared database machinery and the table types.
 * `make check-imports` runs it. Type-only imports count: a type is as much a dependency as a value.
 */
const REPOSITORY = '(^src/db/|-repository\\.ts$)';
/** What answers HTTP: the contract layer, the handlers, the pages, and what assembles or starts them. */
const EDGE = '^src/(http/|handlers/|account-pages/|oidc-pages/|app\\.ts$|server\\.ts$|cli/|wiring/)';

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
      name: 'repositories-know-tables',
      severity: 'error',
      comment: 'Repositories and the transaction helper know tables, not rules, handlers or HTTP.',
      from: { path: REPOSITORY },
      to: { path: '^src/', pathNot: `${REPOSITORY}|^src/errors\\.ts$|^src/config/` },
    },
    {
      name: 'sql-only-in-repositories',
      severity: 'error',
      comment: 'Only repositories (and the database machinery in src/db/) speak SQL: the rest may name Kysely types, never build a query.',
      from: { path: '^src/', pathNot: `${REPOSITORY}|^src/migrate\\.ts$` },
      to: { path: 'node_modules/kysely', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'capabilities-know-no-edge',
      severity: 'error',
      comment: 'Rules throw domain errors (src/errors.ts) and return data; the HTTP layer and handlers translate them.',
      from: { path: '^src/', pathNot: EDGE },
      to: { path: '^src/(handlers|http|account-pages|oidc-pages)/' },
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
    exclude: { path: '^(dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['cjs', 'es6'],
  },
};
