import { execFile, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { appendFileSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { suiteDatabase, TEST_SECRET, type SuiteDatabase } from './support/app.js';
import { builtSources } from './support/build.js';
import { FormBrowser, signIn, signInDevice } from './support/hosted-pages.js';
import { freePort } from './support/net.js';
import { until } from './support/wait.js';
import { contentsPages, documentationPages, fences, readPage, ROOT, type Fence } from './support/markdown.js';
import { startServer, type Running } from './support/server.js';

// The examples of README.md and docs/*.md, run as a reader runs them: in order, on a fresh
// database, against the service in a process of its own, from a folder where `npm run cli` works.
// README.md runs first (it creates the admin, starts the service and signs in); each docs page then
// runs on that service, in the order of the contents page (docs/README.md), starting from the shell
// variables the README left (TOKEN, ADMIN_TOKEN…).
//
// A JavaScript or TypeScript block is a file the reader saves: its first line names it
// (`// .local/sign-in.mjs`), the test writes it there when the page reaches it, and the shell blocks
// after it compile and run it like any other command, so what they print is checked as below.
//
// A block runs in steps: a line `# {...}` after commands shows what they print, and a ```json or
// ```text block right after a shell block shows what its last commands print. Each step must exit
// 0, every JSON answer it prints must be a success unless the shown one is an error, and the last
// one must have the shape shown (the same fields, of the same types; values aside).
//
// The folder's `npm run cli` runs src/cli from the sources, as support/server.ts runs the server:
// `make build` takes half a minute, which the examples do not need to prove. The typed client, which
// the package exports from its build, comes from the suite's one build (support/build.ts): the folder
// is the package, so `account-service/client` resolves to it as in the service's own folder.

/** An account to sign in with in the browser the test plays, when a program waits for a person to. */
interface Person {
  email: string;
  password: string;
}

/**
 * Blocks readers run but this test does not, and why; each carries `<!-- not run: ... -->` in its page.
 * With `startsService` the test starts the service there instead; with `signsIn` it runs the block,
 * signs that person in at the address the program prints, and gives it the address the browser was
 * sent back to, as a reader does in a browser; with `inBackground` it starts the block as a reader
 * does in another terminal, and once the page's other blocks have run, checks that it printed what
 * the page shows.
 */
const NOT_RUN: Array<{
  page: string;
  starts: string;
  why: string;
  startsService?: true;
  signsIn?: Person;
  /** With `signsIn`: the address is a device's page, where the code is entered before signing in; the program is given nothing. */
  onDevice?: true;
  inBackground?: true;
}> = [
  { page: 'README.md', starts: 'make build', why: 'the test runs the sources' },
  { page: 'README.md', starts: 'mkdir -p .local && make run | tee .local/account.log', why: 'runs until stopped', startsService: true },
  { page: 'README.md', starts: 'BASE=http://localhost:8000', why: 'the test sets BASE to the service it started' },
  { page: 'README.md', starts: 'docker compose up -d mailpit', why: 'Docker Compose' },
  { page: 'README.md', starts: 'make test', why: 'the whole suite' },
  { page: 'docs/command-line.md', starts: 'npm run build', why: 'needs the service stopped with the embedded database' },
  {
    page: 'docs/email-code.md',
    starts: 'curl -s -X POST "$BASE/api/auth/email-code/verify"',
    why: 'the code of the same mail spent the link',
  },
  {
    page: 'docs/providers.md',
    starts: 'curl -s -X POST "$BASE/api/auth/providers/token"',
    why: 'the code comes from a sign-in at the provider',
  },
  {
    page: 'docs/providers.md',
    starts: 'curl -s -X POST "$BASE/api/auth/identities/github/link"',
    why: 'needs a registered provider and a browser to sign in at it',
  },
  { page: 'docs/deployment.md', starts: 'docker build', why: 'Docker' },
  { page: 'docs/deployment.md', starts: 'export SECRET_KEY', why: 'Docker Compose' },
  { page: 'docs/importing-users.md', starts: "mkdir -p .local   # Django's password hashes", why: "another system's database" },
  { page: 'docs/importing-users.md', starts: "mkdir -p .local   # the app's password hashes", why: "another system's database" },
  { page: 'docs/postgresql.md', starts: 'createdb accounts', why: 'a PostgreSQL server of its own' },
  { page: 'docs/tokens.md', starts: 'ALGORITHM=ES256 JWT_PRIVATE_KEY', why: 'starts the service with other keys' },
  { page: 'docs/clients.md', starts: 'npm run build && npm pack', why: 'installs into another project' },
  { page: 'docs/clients.md', starts: '// @hey-api/openapi-ts (client-fetch)', why: "two generators' clients, which test/sdk.test.ts runs" },
  { page: 'docs/second-factors.md', starts: 'async function post(path, body, token) {', why: 'browser code (WebAuthn)' },
  { page: 'docs/providers.md', starts: 'const b64url =', why: 'browser code, after a sign-in at the provider' },
  { page: 'docs/webhooks.md', starts: 'WEBHOOK_SECRET="$RECEIVER_SECRET" node', why: 'runs until stopped', inBackground: true },
  {
    page: 'docs/oidc-provider.md',
    starts: 'CLIENT_ID="$WIKI_ID"',
    why: 'a person signs in in a browser',
    signsIn: { email: 'ops@example.com', password: 'the-admin-password' },
  },
  {
    page: 'docs/device-flow.md',
    starts: 'CLIENT_ID="$CLI_ID"',
    why: 'a person enters the code and signs in in a browser',
    signsIn: { email: 'ops@example.com', password: 'the-admin-password' },
    onDevice: true,
  },
];

const SHELL = new Set(['sh', 'bash', 'shell', 'console']);
const SCRIPT = new Set(['js', 'javascript', 'mjs', 'ts', 'typescript']);
const OUTPUT = new Set(['json', 'text']);

/** The file a script block is saved as: its first line, `// .local/name.mjs`. */
const scriptFile = (body: string) => /^\/\/ (\.local\/[\w.-]+\.(?:c|m)?(?:js|ts))$/.exec(body.split('\n')[0])?.[1];

/** What the service is started with beyond the suite's settings: what the pages tell the reader to set. */
const SERVICE_ENV = {
  // docs/webhooks.md: local receivers in development
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  // docs/impersonation.md: token exchange
  IMPERSONATION_ENABLED: 'true',
  // docs/tokens.md: a key pair, so that other services verify the tokens from the published keys
  ALGORITHM: 'ES256',
  JWT_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
};

interface Step {
  script: string;
  /** What the page shows the step prints, if it shows it. */
  shown?: { kind: 'json'; value: unknown } | { kind: 'text'; text: string };
}

interface Block {
  page: string;
  fence: Fence;
  steps: Step[];
  /** For a script block, the file it is saved as. */
  file?: string;
}

/** The first line of a block that is not a comment, to name it by. */
const firstCommand = (body: string) => body.split('\n').find((line) => line.trim() && !line.trim().startsWith('#')) ?? '';

function stepsOf(fence: Fence, following?: Fence): Step[] {
  const lines = fence.language === 'console' ? consoleCommands(fence.body) : fence.body.split('\n');
  const steps: Step[] = [];
  let current: string[] = [];
  for (const line of lines) {
    const shown = /^#\s*([{[].*)$/.exec(line);
    if (shown) {
      steps.push({ script: current.join('\n'), shown: { kind: 'json', value: JSON.parse(shown[1]) } });
      current = [];
    } else current.push(line);
  }
  if (current.some((line) => line.trim() && !line.trim().startsWith('#'))) steps.push({ script: current.join('\n') });
  if (following && steps.length && !steps[steps.length - 1].shown) {
    steps[steps.length - 1].shown =
      following.language === 'json' ? { kind: 'json', value: JSON.parse(following.body) } : { kind: 'text', text: following.body };
  }
  return steps;
}

/** A console block's commands: the lines after a `$ ` prompt (its other lines are their output). */
function consoleCommands(body: string): string[] {
  return body
    .split('\n')
    .filter((line) => line.startsWith('$ '))
    .map((line) => line.slice(2));
}

/** README.md first, then the pages in the order of the contents page, then any page it does not list. */
function pagesInReadingOrder(): string[] {
  const listed = contentsPages();
  const rest = documentationPages().filter((page) => page !== 'README.md' && !listed.includes(page));
  return ['README.md', ...listed, ...rest];
}

interface PageBlocks {
  page: string;
  blocks: Array<Block & { notRun?: (typeof NOT_RUN)[number] }>;
}

function pageBlocks(page: string): PageBlocks {
  const all = fences(readPage(page));
  const markdownLines = readPage(page).split('\n');
  const blocks: PageBlocks['blocks'] = [];
  all.forEach((fence, index) => {
    if (!SHELL.has(fence.language) && !SCRIPT.has(fence.language)) return;
    const next = all[index + 1];
    const closing = fence.line + fence.body.split('\n').length;
    const between = next ? markdownLines.slice(closing + 1, next.line - 1) : [];
    const following = next && OUTPUT.has(next.language) && between.every((line) => line.trim() === '') ? next : undefined;
    const notRun = /^not run:/.test(fence.comment ?? '')
      ? NOT_RUN.find((entry) => entry.page === page && firstCommand(fence.body).startsWith(entry.starts))
      : undefined;
    if (SCRIPT.has(fence.language)) blocks.push({ page, fence, steps: [], file: scriptFile(fence.body), notRun });
    else blocks.push({ page, fence, steps: stepsOf(fence, following), notRun });
  });
  return { page, blocks };
}

const pages = pagesInReadingOrder().map(pageBlocks);

/** The JSON values written one after another (curl adds no newline after a body). */
function jsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{' || char === '[') {
      if (depth++ === 0) start = i;
    } else if (char === '}' || char === ']') {
      if (--depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
    } else if (depth === 0 && char.trim()) throw new Error(`not JSON at ${i}: ${text.slice(i, i + 80)}`);
  }
  if (depth !== 0) throw new Error(`unfinished JSON: ${text.slice(start, start + 200)}`);
  return values;
}

const kind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

/** Where `actual` differs in shape from `shown`: fields and types, not values; each item of a list like the first shown. */
function shapeDifferences(shown: unknown, actual: unknown, path = '$'): string[] {
  if (kind(shown) !== kind(actual)) return [`${path}: shown ${kind(shown)}, got ${kind(actual)} ${JSON.stringify(actual)}`];
  if (Array.isArray(shown) && Array.isArray(actual)) {
    if (shown.length === 0) return [];
    if (actual.length === 0) return [`${path}: shown items, got none`];
    return actual.flatMap((item, index) => shapeDifferences(shown[0], item, `${path}[${index}]`));
  }
  if (kind(shown) === 'object') {
    const a = actual as Record<string, unknown>;
    const s = shown as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(s), ...Object.keys(a)])].sort();
    return keys.flatMap((key) => {
      if (!(key in a)) return [`${path}.${key}: shown, missing`];
      if (!(key in s)) return [`${path}.${key}: not shown, present`];
      return shapeDifferences(s[key], a[key], `${path}.${key}`);
    });
  }
  return [];
}

const isFailure = (value: unknown) => kind(value) === 'object' && (value as { success?: unknown }).success === false;

/** The shown text as a pattern: numbers stand for any number. */
const textPattern = (text: string) =>
  new RegExp(
    `^${text
      .trim()
      .split(/\d+/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('\\d+')}$`,
  );

interface Shell {
  dir: string;
  env: Record<string, string>;
  /** The file that carries the variables one step set to the next. */
  state: string;
}

/** Runs one step in bash: the variables earlier steps set are read first, and those it sets are kept. */
function runStep(shell: Shell, script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const wrapped = [
    '__before=$(compgen -v)',
    `. ${JSON.stringify(shell.state)}`,
    'set -eo pipefail',
    script,
    'set +e',
    `for __name in $(compgen -v); do case "$__name" in __*|BASH_*|PIPESTATUS|_) continue;; esac; ` +
      `if ! grep -qx "$__name" <<<"$__before"; then declare -p "$__name"; fi; done > ${JSON.stringify(shell.state + '.next')}`,
    `mv ${JSON.stringify(shell.state + '.next')} ${JSON.stringify(shell.state)}`,
  ].join('\n');
  return new Promise((resolve) => {
    execFile('bash', ['-c', wrapped], { cwd: shell.dir, env: shell.env, timeout: 100_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Checks what a step printed against what the page shows it prints. */
function checkPrinted(where: string, stdout: string, step: Step): void {
  if (step.shown?.kind === 'text') {
    if (!textPattern(step.shown.text).test(stdout.trim())) throw new Error(`${where}printed ${stdout}, shown ${step.shown.text}`);
    return;
  }
  const values = jsonValues(stdout);
  const shown = step.shown?.value;
  const failures = values.filter((value, index) => isFailure(value) && !(index === values.length - 1 && isFailure(shown)));
  if (failures.length) throw new Error(`${where}answered ${JSON.stringify(failures)}`);
  if (step.shown) {
    if (values.length === 0) throw new Error(`${where}printed nothing, shown ${JSON.stringify(shown)}`);
    const differences = shapeDifferences(shown, values[values.length - 1]);
    if (differences.length)
      throw new Error(`${where}printed ${stdout}\nwhich differs from what the page shows:\n${differences.join('\n')}`);
  }
}

async function runBlock(shell: Shell, block: Block): Promise<void> {
  for (const step of block.steps) {
    const where = `${block.page}:${block.fence.line}, the step\n${step.script.trim()}\n`;
    const run = await runStep(shell, step.script);
    if (run.code !== 0) throw new Error(`${where}exited ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
    checkPrinted(where, run.stdout, step);
  }
}

/** A block started as in another terminal, left running while the page's other blocks run. */
interface Background {
  where: string;
  shown?: Step['shown'];
  stdout: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<unknown>;
}

/** Starts a block in the background and waits for its first line of output (a server says it listens). */
async function startInBackground(shell: Shell, block: Block): Promise<Background> {
  const script = block.steps.map((step) => step.script).join('\n');
  const where = `${block.page}:${block.fence.line}, in the background\n${script.trim()}\n`;
  // A process group of its own, so that stopping it stops the program the shell started too.
  const child = spawn('bash', ['-c', `. ${JSON.stringify(shell.state)}\nset -eo pipefail\n${script}`], {
    cwd: shell.dir,
    env: shell.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const running: Background = {
    where,
    shown: block.steps[block.steps.length - 1]?.shown,
    stdout: () => stdout,
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
      return exited;
    },
  };
  const started = await Promise.race([
    until(() => stdout.includes('\n'), 'its first line', 30_000).then(() => true),
    exited.then(() => false),
  ]);
  if (!started) throw new Error(`${where}exited first\nstdout: ${stdout}\nstderr: ${stderr}`);
  return running;
}

/** Waits until a block left running has printed what its page shows, then stops it. */
async function finishBackground(running: Background): Promise<void> {
  try {
    const { shown } = running;
    if (shown?.kind !== 'text') return;
    const printed = () => textPattern(shown.text).test(running.stdout().trim());
    const done = await Promise.race([until(printed, `what the page shows`, 30_000).then(() => true), running.exited.then(() => printed())]);
    if (!done) throw new Error(`${running.where}exited having printed ${running.stdout()}, shown ${shown.text}`);
  } finally {
    await running.stop();
  }
}

/**
 * Runs a block whose program prints an address to sign in at and then waits for the address the
 * browser was sent back to: the person signs in there in the test's browser, and the program is
 * given where the browser landed. What it prints after the address is checked as a step's output.
 */
async function runSigningIn(shell: Shell, block: Block, person: Person, base: string, onDevice = false): Promise<void> {
  const step: Step = { script: block.steps.map((each) => each.script).join('\n'), shown: block.steps[block.steps.length - 1]?.shown };
  const where = `${block.page}:${block.fence.line}, the step\n${step.script.trim()}\n`;
  const child = spawn('bash', ['-c', `. ${JSON.stringify(shell.state)}\nset -eo pipefail\n${step.script}`], {
    cwd: shell.dir,
    env: shell.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const address = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        const line = stdout
          .split('\n')
          .slice(0, -1)
          .find((text) => /^https?:\/\/\S+$/.test(text.trim()));
        if (line) resolve(line.trim());
      });
      void exited.then((code) =>
        reject(new Error(`${where}exited ${code} before printing an address\nstdout: ${stdout}\nstderr: ${stderr}`)),
      );
    });
    if (onDevice) {
      const done = await signInDevice(new FormBrowser(base), address, person.email, person.password);
      if (done.status !== 200 || !new URL(done.url).pathname.startsWith('/oauth2/device/'))
        throw new Error(`${where}the device's sign-in stopped at ${done.url} (${done.status}):\n${done.html}`);
      child.stdin.end();
    } else {
      const landed = await signIn(new FormBrowser(base), address, person.email, person.password);
      if (landed.status !== 0) throw new Error(`${where}the sign-in stopped at ${landed.url} (${landed.status}):\n${landed.html}`);
      child.stdin.end(`${landed.url}\n`);
    }
    const code = await exited;
    if (code !== 0) throw new Error(`${where}exited ${code}\nstdout: ${stdout}\nstderr: ${stderr}`);
    checkPrinted(where, stdout.slice(stdout.indexOf(address) + address.length), step);
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
  }
}

describe('the checks of an answer', () => {
  it('read answers written back to back', () => {
    expect(jsonValues('{"a":"}{"}[1,{"b":[]}]\n{}')).toEqual([{ a: '}{' }, [1, { b: [] }], {}]);
    expect(() => jsonValues('{"a":1} created')).toThrow(/not JSON/);
  });

  it('tell a missing, an extra and a retyped field, but not another value', () => {
    const shown = { success: true, data: { id: 1, tags: ['x'], at: null } };
    expect(shapeDifferences(shown, { success: true, data: { id: 7, tags: ['y', 'z'], at: null } })).toEqual([]);
    expect(shapeDifferences(shown, { success: true, data: { id: '7', tags: [3], extra: 1 } })).toEqual([
      '$.data.at: shown, missing',
      '$.data.extra: not shown, present',
      '$.data.id: shown number, got string "7"',
      '$.data.tags[0]: shown string, got number 3',
    ]);
  });

  it('take any number where a text shows one', () => {
    expect(textPattern('created the admin ops@example.com (id 1)').test('created the admin ops@example.com (id 12)')).toBe(true);
    expect(textPattern('created the admin ops@example.com (id 1)').test('created the admin opsXexample.com (id 1)')).toBe(false);
  });
});

describe('the marked blocks', () => {
  it('are exactly the ones this test lists as not run', () => {
    const marked = pages.flatMap(({ page, blocks }) =>
      blocks.filter((block) => /^not run:/.test(block.fence.comment ?? '')).map((block) => `${page}: ${firstCommand(block.fence.body)}`),
    );
    const listed = pages.flatMap(({ blocks }) =>
      blocks.filter((block) => block.notRun).map((block) => `${block.page}: ${firstCommand(block.fence.body)}`),
    );
    expect(marked).toEqual(listed);
    expect(listed).toHaveLength(NOT_RUN.length);
  });

  it('leave no script unsaved: each is a file a later block of its page runs, or marked not run', () => {
    const unsaved = pages.flatMap(({ blocks }) =>
      blocks
        .filter((block) => SCRIPT.has(block.fence.language) && !block.file && !block.notRun)
        .map((block) => `${block.page}:${block.fence.line}`),
    );
    expect(unsaved).toEqual([]);
    const unused = pages.flatMap(({ blocks }) =>
      blocks
        .filter((block) => block.file)
        .filter((block) => {
          const stem = block.file!.replace(/\.[cm]?[jt]s$/, '');
          const later = blocks.filter((other) => SHELL.has(other.fence.language) && other.fence.line > block.fence.line);
          return !later.some((other) => (!other.notRun || other.notRun.signsIn) && other.fence.body.includes(stem));
        })
        .map((block) => `${block.page}:${block.fence.line} ${block.file}`),
    );
    expect(unused).toEqual([]);
  });

  it('leave every page that shows curl with blocks to run', () => {
    for (const { page, blocks } of pages) {
      const curl = blocks.some((block) => !block.notRun && /\bcurl\b/.test(block.fence.body));
      if (/```(?:sh|bash|console)[^`]*\bcurl\b/.test(readPage(page))) expect({ page, curl }).toEqual({ page, curl: true });
    }
  });
});

describe('the examples, in order on a fresh database', () => {
  let database: SuiteDatabase;
  let dir: string;
  let server: Running | undefined;
  let base = '';
  const readmeState = () => join(dir, 'readme.state');

  beforeAll(async () => {
    database = await suiteDatabase();
    dir = mkdtempSync(join(tmpdir(), 'readme-examples-'));
    const { name, exports } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: unknown };
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name,
        private: true,
        exports,
        scripts: { cli: `node --import ${join(ROOT, 'test/support/ts-register.mjs')} ${join(ROOT, 'src/cli/index.ts')}` },
      }),
    );
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    // A copy, not a link: the build's imports resolve from the folder, as in the package.
    cpSync(await builtSources(), join(dir, 'dist'), { recursive: true });
    writeFileSync(readmeState(), '');
  }, 300_000);

  const background: Background[] = [];

  afterAll(async () => {
    await Promise.all(background.map((running) => running.stop()));
    server?.child.kill('SIGTERM');
    await server?.exited;
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const shellFor = (state: string): Shell => ({
    dir,
    state,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      BASE: base,
      // The suite's settings, as support/server.ts gives them to the service: the command line
      // hashes the admin's password at the same cost the service checks it.
      SECRET_KEY: TEST_SECRET,
      BCRYPT_COST: '4',
      ...database.env,
    },
  });

  async function startService(): Promise<void> {
    // The address the service is reached at is its APP_URL, and so the issuer of its tokens, as under `make run`.
    // As the README names it: the default APP_URL, the issuer and the origin of the redirect allow-list.
    const port = await freePort();
    base = `http://localhost:${port}`;
    server = await startServer({ ...database.env, ...SERVICE_ENV, PORT: String(port), APP_URL: base });
    // `make run | tee .local/account.log`: the examples read the mails' links from it.
    mkdirSync(join(dir, '.local'), { recursive: true });
    server.child.stdout!.on('data', (chunk: Buffer) => appendFileSync(join(dir, '.local', 'account.log'), chunk));
    await server.waitFor((line) => /^listening on/.test(String(line.msg)), 100_000);
  }

  for (const { page, blocks } of pages) {
    if (!blocks.some((block) => !block.notRun)) continue;
    describe(page, () => {
      const state = () => (page === 'README.md' ? readmeState() : join(dir, `${page.replace(/\W/g, '_')}.state`));
      beforeAll(() => {
        if (page !== 'README.md') copyFileSync(readmeState(), state());
      });
      for (const block of blocks) {
        const name = `line ${block.fence.line}: ${firstCommand(block.fence.body)}`;
        const { file } = block;
        if (block.notRun) {
          const { startsService, signsIn, onDevice, inBackground } = block.notRun;
          if (startsService) it(`${name} (the test starts the service)`, startService, 120_000);
          if (signsIn)
            it(
              `${name} (the test signs in as ${signsIn.email})`,
              () => runSigningIn(shellFor(state()), block, signsIn, base, onDevice),
              120_000,
            );
          if (inBackground)
            it(`${name} (the test starts it in the background)`, async () => {
              background.push(await startInBackground(shellFor(state()), block));
            });
          continue;
        }
        if (file) {
          it(`line ${block.fence.line}: saves ${file}`, () => {
            mkdirSync(dirname(join(dir, file)), { recursive: true });
            writeFileSync(join(dir, file), `${block.fence.body}\n`);
          });
          continue;
        }
        it(name, () => runBlock(shellFor(state()), block), 120_000);
      }
      if (blocks.some((block) => block.notRun?.inBackground))
        it('what the blocks left running printed', async () => {
          const started = background.splice(0);
          for (const running of started) await finishBackground(running);
        });
    });
  }
});
