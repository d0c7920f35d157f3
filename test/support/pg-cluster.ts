/*
 * A real PostgreSQL server that a test can stop under a running service and start again. The
 * cluster is private (never the machine's shared one), in a temporary folder.
 *
 * It is independent of the jest project, so a suite that uses it runs once: in the 'postgres'
 * project when there is one, otherwise in the 'embedded' project (`describeOutage`).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, type Response, type TestContext } from './app.js';
import { freePort } from './net.js';

const run = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const binariesPresent = ['initdb', 'pg_ctl', 'postgres'].every((name) => existsSync(join(PG_BIN, name)));
const postgresProjectActive = Boolean(process.env.TEST_DATABASE_URL);
const thisProjectRunsIt = process.env.TEST_DATABASE_KIND === 'postgres' || !postgresProjectActive;

export const skipReason = !binariesPresent
  ? `PostgreSQL binaries not found in ${PG_BIN}`
  : !thisProjectRunsIt
    ? 'runs once, in the postgres project'
    : undefined;
export const describeOutage = skipReason ? describe.skip : describe;

if (skipReason) {
  console.log(`database-outage suite skipped in the ${process.env.TEST_DATABASE_KIND ?? 'embedded'} project: ${skipReason}`);
}

/** A private cluster in a temporary folder, run as a non-root user when the tests run as root. */
export class Cluster {
  readonly dataDir: string;
  private readonly logFile: string;
  private running = false;

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly asUser: string | undefined,
  ) {
    this.dataDir = join(dir, 'data');
    this.logFile = join(dir, 'server.log');
  }

  static async create(): Promise<Cluster> {
    const dir = await mkdtemp(join(tmpdir(), `outage-pg-${process.env.TEST_DATABASE_KIND ?? 'x'}-`));
    // initdb refuses to run as root: hand the folder to the postgres account and run as it.
    let asUser: string | undefined;
    if (process.getuid?.() === 0) {
      asUser = 'postgres';
      const { stdout } = await run('id', ['-u', asUser]);
      const { stdout: gid } = await run('id', ['-g', asUser]);
      await chown(dir, Number(stdout.trim()), Number(gid.trim()));
    }
    const cluster = new Cluster(dir, await freePort(), asUser);
    await cluster.pg('initdb', [
      '-D',
      cluster.dataDir,
      '-A',
      'trust',
      '-U',
      'postgres',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
      '--no-instructions',
    ]);
    return cluster;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      `-c listen_addresses=127.0.0.1`,
      `-c unix_socket_directories=${this.dir}`,
      '-c fsync=off',
      '-c full_page_writes=off',
      '-c max_connections=30',
    ].join(' ');
    await this.pg('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-o', options, '-w', '-t', '30', 'start']);
    this.running = true;
  }

  async stop(mode: 'immediate' | 'fast'): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
    this.running = false;
  }

  /** Stops the server if it runs and removes every file of the cluster. */
  async destroy(): Promise<void> {
    if (this.running || existsSync(join(this.dataDir, 'postmaster.pid'))) {
      await this.pg('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop']).catch(() => undefined);
      this.running = false;
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  async log(): Promise<string> {
    return readFile(this.logFile, 'utf8').catch(() => '');
  }

  private async pg(tool: string, args: string[]): Promise<void> {
    const binary = join(PG_BIN, tool);
    const [command, argv] =
      this.asUser && this.asUser !== userInfo().username ? ['runuser', ['-u', this.asUser, '--', binary, ...args]] : [binary, args];
    try {
      await run(command, argv, { cwd: this.dir, timeout: 60_000 });
    } catch (error) {
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(`${tool} ${args.join(' ')} failed: ${stderr || stdout || String(error)}\n${await this.log()}`, { cause: error });
    }
  }
}

export interface OutageSetup {
  /** The private cluster the app runs on (set once beforeAll has run). */
  readonly cluster: Cluster;
  /** A user registered on it before any outage. */
  readonly user: { email: string; password: string; access: string; refresh: string };
  /** The app on the cluster; throws if it did not start. */
  app: () => TestContext;
  /** A JSON login as `user`. */
  login: () => Promise<Response>;
}

/**
 * Inside a describeOutage block: makes a private cluster, starts an app on it and registers a user
 * before the tests, and removes both after them (the app first, or its pool would keep reconnecting).
 */
export function appOnPrivateCluster(): OutageSetup {
  let cluster: Cluster | undefined;
  let t: TestContext | undefined;
  let user: OutageSetup['user'] | undefined;
  const setup: OutageSetup = {
    get cluster() {
      if (!cluster) throw new Error('the cluster did not start');
      return cluster;
    },
    get user() {
      if (!user) throw new Error('no user was registered');
      return user;
    },
    app: () => {
      if (!t) throw new Error('the app did not start');
      return t;
    },
    login: () => setup.app().post('/api/auth/login/json', { email: setup.user.email, password: setup.user.password }),
  };
  beforeAll(async () => {
    cluster = await Cluster.create();
    await cluster.start();
    t = await startTestApp({ DATABASE_URL: cluster.url });
    const registered = await t.register();
    user = { email: registered.email, password: registered.password, access: registered.access, refresh: registered.refresh };
  }, 120_000);
  afterAll(async () => {
    await t?.close().catch(() => undefined);
    await cluster?.destroy();
  }, 60_000);
  return setup;
}
