// typescript-eslint's type-aware recommended rules over everything tsc checks; Prettier owns layout.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'console/dist/', 'generated/', 'coverage/', 'data/', 'test/sdk/', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // An unused name is tsc's to report (noUnusedLocals, noUnusedParameters); `_`-prefixed ones are deliberate.
      '@typescript-eslint/no-unused-vars': 'off',
      // Handlers and the implementations of async interfaces return promises by contract, awaited or not.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Migrations are frozen in time: they see the database as `Kysely<any>`, never the app's table types.
    files: ['migrations/**/*.ts', 'src/db/migrate.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Tests read JSON bodies that the test client has already checked against the contract; typing
    // every one of them again would repeat the contract, so `any` is allowed there.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
