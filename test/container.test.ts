import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';

// No container engine runs with the tests: these read the image and stack definitions and check what
// a deployment relies on against the rest of the repository.

const root = join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

interface Instruction {
  keyword: string;
  args: string;
}

interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** The Dockerfile's instructions by stage, with continuation lines joined and comments dropped. */
function dockerStages(text: string): Stage[] {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { keyword: keyword.toUpperCase(), args: args.trim() };
    if (instruction.keyword === 'FROM') {
      const [, from, name] = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?/i.exec(instruction.args) ?? [];
      stages.push({ from, name, instructions: [] });
    } else if (stages.length > 0) {
      stages[stages.length - 1].instructions.push(instruction);
    }
  }
  return stages;
}

const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);
const last = (stage: Stage, keyword: string) => all(stage, keyword).at(-1);

/** Patterns of .dockerignore, for the simple forms it uses (a name, or a name with a trailing wildcard). */
function ignored(path: string): boolean {
  const patterns = read('.dockerignore')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const top = path.split('/')[0];
  return patterns.some((pattern) => {
    const regex = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    return regex.test(top) || regex.test(path);
  });
}

describe('Dockerfile', () => {
  const stages = dockerStages(read('Dockerfile'));
  const runtime = stages[stages.length - 1];
  const pkg = JSON.parse(read('package.json'));

  it('builds in one stage and runs from a later one, on a Node release the service supports', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) {
      const major = /^node:(\d+)/.exec(stage.from)?.[1];
      expect(Number(major)).toBeGreaterThanOrEqual(Number(/\d+/.exec(pkg.engines.node)?.[0]));
    }
    const build = stages.find((stage) => all(stage, 'RUN').some((run) => run.args.includes('npm run build')));
    expect(build).toBeDefined();
    expect(build).not.toBe(runtime);
    // The runtime stage takes the build's output rather than building again.
    expect(all(runtime, 'COPY').some((copy) => copy.args.includes(`--from=${build?.name}`) && copy.args.includes('dist'))).toBe(true);
    expect(all(runtime, 'RUN').some((run) => run.args.includes('npm run build'))).toBe(false);
  });

  it('installs from the lock file and leaves the development dependencies out of the image', () => {
    const build = stages[0];
    const copiesLock = all(build, 'COPY').some((copy) => copy.args.includes('package-lock.json'));
    expect(copiesLock).toBe(true);
    const runs = stages.flatMap((stage) => all(stage, 'RUN').map((run) => run.args)).join('\n');
    expect(runs).toMatch(/--omit=dev|--production/);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    for (const stage of stages) {
      for (const copy of all(stage, 'COPY').filter((c) => !c.args.includes('--from='))) {
        const sources = copy.args
          .split(/\s+/)
          .filter((part) => !part.startsWith('--'))
          .slice(0, -1);
        for (const source of sources) {
          expect([source, existsSync(join(root, source))]).toEqual([source, true]);
          expect([source, ignored(source)]).toEqual([source, false]);
        }
      }
    }
  });

  it('runs as an unprivileged user in production mode, listening on every interface', () => {
    const user = last(runtime, 'USER')?.args;
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    const env = all(runtime, 'ENV')
      .map((e) => e.args)
      .join(' ');
    expect(env).toMatch(/NODE_ENV=production/);
    expect(env).toMatch(/HOST=0\.0\.0\.0/);
    expect(all(runtime, 'EXPOSE').map((e) => e.args)).toContain('8000');
    expect(last(runtime, 'STOPSIGNAL')?.args).toBe('SIGTERM');
  });

  it('checks health with node against the liveness endpoint of the contract', () => {
    const check = last(runtime, 'HEALTHCHECK')?.args ?? '';
    expect(check).toMatch(/CMD \[\s*"node"/);
    expect(check).toContain('/health/live');
    const contract = yaml.load(read('api/openapi.yaml')) as { paths: Record<string, unknown> };
    expect(Object.keys(contract.paths)).toContain('/health/live');
  });

  it('starts the server the build produces', () => {
    const cmd = JSON.parse(last(runtime, 'CMD')?.args ?? 'null') as string[];
    expect(cmd[0]).toBe('node');
    expect(cmd[1]).toBe(pkg.main);
    // dist/src/server.js is what the build makes of src/server.ts.
    expect(existsSync(join(root, cmd[1].replace(/^dist\//, '').replace(/\.js$/, '.ts')))).toBe(true);
    expect(pkg.scripts.start).toBe(`node ${cmd[1]}`);
  });
});

describe('compose.yaml', () => {
  const compose = yaml.load(read('compose.yaml')) as {
    services: Record<string, any>;
    volumes?: Record<string, unknown>;
  };
  const services = Object.entries(compose.services);
  const [dbName, db] = services.find(([, s]) => String(s.image).startsWith('postgres')) ?? [];
  const [appName, app] = services.find(([, s]) => s.build !== undefined) ?? [];
  const [mailName, mail] = services.find(([, s]) => String(s.image).includes('mailpit')) ?? [];

  it('has PostgreSQL, the service built from this folder, and a mail catcher', () => {
    expect(db).toBeDefined();
    expect(app).toBeDefined();
    expect(mail).toBeDefined();
    expect(app.build === '.' || app.build?.context === '.').toBe(true);
  });

  it('keeps the database on a named volume and reports it healthy with pg_isready', () => {
    const named = (db.volumes as string[]).map((v) => v.split(':')[0]);
    expect(named.some((name) => Object.keys(compose.volumes ?? {}).includes(name))).toBe(true);
    expect(JSON.stringify(db.healthcheck.test)).toContain('pg_isready');
  });

  it('starts the service once the database is healthy, pointed at it and at the mail catcher', () => {
    expect(app.depends_on[dbName as string]).toEqual({ condition: 'service_healthy' });
    const env = app.environment as Record<string, string>;
    const url = new URL(env.DATABASE_URL);
    expect(url.protocol).toBe('postgres:');
    expect(url.hostname).toBe(dbName);
    expect(decodeURIComponent(url.username)).toBe(db.environment.POSTGRES_USER);
    expect(decodeURIComponent(url.password)).toBe(db.environment.POSTGRES_PASSWORD);
    expect(url.pathname).toBe(`/${db.environment.POSTGRES_DB}`);
    // Mailpit offers no STARTTLS, which the production image otherwise requires.
    expect(env.SMTP_URL).toBe(`smtp://${mailName}:1025/?ignoreTLS=true`);
    expect((app.ports as string[]).some((p) => p.endsWith(':8000'))).toBe(true);
    expect((mail.ports as string[]).some((p) => p.endsWith(':8025'))).toBe(true);
  });

  it('requires SECRET_KEY from the environment rather than shipping one', () => {
    const secret = (app.environment as Record<string, string>).SECRET_KEY;
    expect(secret).toMatch(/^\$\{SECRET_KEY:\?[^}]+\}$/);
  });

  it('names only services that exist', () => {
    for (const [, service] of services) {
      for (const dependency of Object.keys(service.depends_on ?? {})) expect(Object.keys(compose.services)).toContain(dependency);
    }
    expect(appName).toBeDefined();
  });
});
