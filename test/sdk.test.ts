import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { ADMIN, startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { buildOnce, sourcesHash } from './support/build.js';
import type { FlowInput, FlowResult, OrvalFlowInput, OrvalFlowResult } from './sdk/flow.js';

const require = createRequire(import.meta.url);

// Clients generated from api/openapi.yaml by four generators nobody here wrote, type-checked with
// the flows in test/sdk that use them, then run against the live service: register, login, me,
// refresh, logout, the user list in both shapes, and an admin's create, update, delete, restore;
// orval's for the token URL's form. And a Perl client that builds itself from /openapi.json.

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const CONTRACT = join(ROOT, 'api', 'openapi.yaml');
const bin = (path: string) => join(ROOT, 'node_modules', path);

type Flow = { run(input: FlowInput): Promise<FlowResult> };
type OrvalFlow = { run(input: OrvalFlowInput): Promise<OrvalFlowResult> };

let workDir: string;
let flows: Record<'hey-api' | 'codegen' | 'zod', Flow>;
let orval: OrvalFlow;
let t: TestContext;

/** Generates the clients, compiles them with the flows, and returns the diagnostics. */
async function buildClients(dir: string): Promise<string[]> {
  // The flows first: orval's client imports the fetch it calls from among them.
  cpSync(join(import.meta.dirname, 'sdk'), join(dir, 'flows'), { recursive: true, filter: (path) => !path.includes(join('sdk', 'perl')) });
  writeFileSync(
    join(dir, 'orval.config.cjs'),
    `module.exports = ${JSON.stringify({
      account: {
        input: { target: CONTRACT },
        output: {
          target: join(dir, 'orval', 'client.ts'),
          client: 'fetch',
          mode: 'single',
          override: { mutator: { path: join(dir, 'flows', 'orval-fetch.ts'), name: 'orvalFetch' } },
        },
      },
    })};\n`,
  );
  // openapi-zod-client's client imports Zodios and zod, which resolve from the service's own packages.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  mkdirSync(join(dir, 'zod'));
  await Promise.all([
    // orval with its fetch client, the base URL put in front by the flows' own fetch.
    run(process.execPath, [bin('orval/dist/bin/orval.js'), '--config', join(dir, 'orval.config.cjs')], { cwd: dir }),
    // @hey-api/openapi-ts with its default plugins: types, the SDK functions and its fetch client.
    run(process.execPath, [bin('@hey-api/openapi-ts/bin/run.js'), '-i', CONTRACT, '-o', join(dir, 'hey-api')], { cwd: dir }),
    run(
      process.execPath,
      [
        bin('openapi-typescript-codegen/bin/index.js'),
        '--input',
        CONTRACT,
        '--output',
        join(dir, 'codegen'),
        '--client',
        'fetch',
        '--useOptions',
      ],
      { cwd: dir },
    ),
    // openapi-zod-client: Zodios endpoints with a zod schema for every body, parameter and answer.
    run(process.execPath, [bin('openapi-zod-client/bin.js'), CONTRACT, '-o', join(dir, 'zod', 'client.ts')], { cwd: dir }),
  ]);
  const program = ts.createProgram({
    rootNames: readdirSync(join(dir, 'flows'))
      .filter((file) => file.endsWith('.ts'))
      .map((file) => join(dir, 'flows', file)),
    options: {
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
      types: ['node'],
      typeRoots: [join(ROOT, 'node_modules', '@types')],
      skipLibCheck: true,
      rootDir: dir,
      outDir: join(dir, 'out'),
    },
  });
  const emitted = program.emit();
  return [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

// The clients and their compiled flows are the same whatever the database: made once per run, by the
// first of the two halves of the suite to get there, with what the compiler said kept beside them.
const builtClients = () =>
  buildOnce(`account-test-sdk-${sourcesHash(['api/openapi.yaml', 'test/sdk', 'test/sdk.test.ts', 'package-lock.json'])}`, async (staging) =>
    writeFileSync(join(staging, 'diagnostics.json'), JSON.stringify(await buildClients(staging))),
  );

beforeAll(async () => {
  const [dir, app] = await Promise.all([builtClients(), startTestApp()]);
  workDir = dir;
  t = app;
  // More users than a page of two, so that both list shapes say more exist.
  await t.register();
  await t.register();
  // The generated code and the flows type-check under `strict`.
  expect(JSON.parse(readFileSync(join(workDir, 'diagnostics.json'), 'utf8'))).toEqual([]);
  flows = {
    'hey-api': require(join(workDir, 'out', 'flows', 'hey-api.flow.js')) as Flow,
    codegen: require(join(workDir, 'out', 'flows', 'codegen.flow.js')) as Flow,
    zod: require(join(workDir, 'out', 'flows', 'zod.flow.js')) as Flow,
  };
  orval = require(join(workDir, 'out', 'flows', 'orval.flow.js')) as OrvalFlow;
}, 180_000);

afterAll(async () => {
  await t?.close();
});

describe.each(['hey-api', 'codegen', 'zod'] as const)('a client generated by %s', (generator) => {
  it('signs up, signs in, refreshes, signs out, lists in both shapes and manages a user', async () => {
    const input: FlowInput = {
      baseUrl: t.baseUrl,
      admin: ADMIN,
      email: uniqueEmail(generator),
      password: 'password-123',
      newEmail: uniqueEmail(`${generator}-made`),
    };
    const result = await flows[generator].run(input);

    const registered = await t.db.selectFrom('users').selectAll().where('id', '=', result.registeredId).executeTakeFirstOrThrow();
    expect(registered.email).toBe(input.email);
    expect(result.meEmail).toBe(input.email);

    // Logout revoked the session the refresh rotated, and its access token stopped working.
    const session = await t.db.selectFrom('sessions').selectAll().where('id', '=', result.refreshedSid).executeTakeFirstOrThrow();
    expect(session.user_id).toBe(result.registeredId);
    expect(session.revoked_at).not.toBeNull();
    expect(result.meAfterLogout).toBe(401);

    // The page shape and the cursor shape, each on its own: no default of the other crept in.
    expect(result.pageMeta).toMatchObject({ page: 1, per_page: 2 });
    const firstTwo = await t.db.selectFrom('users').select('id').where('deleted_at', 'is', null).orderBy('id').limit(2).execute();
    expect(result.pageIds).toEqual(firstTwo.map((row) => row.id));
    expect(result.cursorIds).toEqual(firstTwo.map((row) => row.id));
    expect(result.cursorNext).toBe(firstTwo[1].id);

    const created = await t.db.selectFrom('users').selectAll().where('id', '=', result.createdId).executeTakeFirstOrThrow();
    expect(created).toMatchObject({
      email: input.newEmail,
      name: `Renamed By ${{ 'hey-api': 'Hey', codegen: 'Codegen', zod: 'Zod' }[generator]}`,
      deleted_at: null,
    });
    expect(result.updatedName).toBe(created.name);
    expect(result.restoredDeletedAt).toBeNull();
  });
});

describe('a Perl client (OpenAPI::Client, built at run time from the served /openapi.json)', () => {
  it('signs up, signs in by JSON and by form, refreshes, updates the profile, manages a user and signs out', async () => {
    const email = uniqueEmail('perl');
    const newEmail = uniqueEmail('perl-made');
    const script = join(import.meta.dirname, 'sdk', 'perl', 'flow.pl');
    const { stdout } = await run('perl', [script, t.baseUrl, ADMIN.email, ADMIN.password, email, 'password-123', newEmail]);
    const result = JSON.parse(stdout) as { registered_id: number; refreshed_sid: string; created_id: number; me_after_logout: number };

    const registered = await t.db.selectFrom('users').selectAll().where('id', '=', result.registered_id).executeTakeFirstOrThrow();
    expect(registered).toMatchObject({ email, name: 'Ursula Perl' });
    // Nothing reached the service for the name the client refused by the contract's pattern.
    expect(await t.db.selectFrom('users').select('id').where('email', '=', `x${email}`).executeTakeFirst()).toBeUndefined();
    const session = await t.db.selectFrom('sessions').selectAll().where('id', '=', result.refreshed_sid).executeTakeFirstOrThrow();
    expect(session.user_id).toBe(result.registered_id);
    expect(session.revoked_at).not.toBeNull();
    expect(result.me_after_logout).toBe(401);
    const created = await t.db.selectFrom('users').selectAll().where('id', '=', result.created_id).executeTakeFirstOrThrow();
    expect(created).toMatchObject({ email: newEmail, name: 'Renamed By Perl', is_active: false, role: 'user' });
  }, 120_000);
});

describe('a client generated by orval', () => {
  it('signs in and refreshes by form, sending each grant as its fields alone', async () => {
    const user = await t.register({ email: uniqueEmail('orval') });
    const result = await orval.run({ baseUrl: t.baseUrl, email: user.email, password: user.password });

    expect(result.userId).toBe(user.id);
    // One grant_type, and no field the caller left out (no `refresh_token=undefined`).
    expect(result.sent).toEqual([
      new URLSearchParams({ grant_type: 'password', username: user.email, password: user.password }).toString(),
      new URLSearchParams({ grant_type: 'refresh_token', refresh_token: result.signedInRefreshToken }).toString(),
    ]);
    // The refresh rotated the session the form login opened.
    expect(result.refreshedSid).toBe(result.signedInSid);
    const session = await t.db.selectFrom('sessions').selectAll().where('id', '=', result.signedInSid).executeTakeFirstOrThrow();
    expect(session.user_id).toBe(user.id);
    expect(session.refresh_token_hash).toBe(createHash('sha256').update(result.refreshToken).digest('hex'));
  });
});
