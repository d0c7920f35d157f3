import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createApp, type App } from '../src/app.js';
import { createLogger } from '../src/logger.js';
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { captureLog } from './support/log.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';
import { until } from './support/wait.js';

const sha1 = (password: string) => createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();

const BREACHED = 'breached-passphrase-1';
const CLEAN = 'unbreached-passphrase-2';
const BREACHED_MESSAGE = 'has appeared in a data breach; choose another';

/**
 * A local Pwned Passwords range server that records every request. It knows BREACHED (seen 42 times)
 * and answers CLEAN's suffix only as padding (count 0), as the real API does for decoys.
 */
class RangeServer {
  readonly received: Array<{ url: string; headers: IncomingHttpHeaders; body: string }> = [];
  mode: 'answer' | 'hang' | 'fail' = 'answer';
  private readonly hanging: ServerResponse[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        this.received.push({ url: req.url ?? '', headers: req.headers, body });
        if (this.mode === 'hang') return void this.hanging.push(res);
        if (this.mode === 'fail') return void res.writeHead(503).end('unavailable');
        const prefix = (req.url ?? '').split('/').pop() ?? '';
        const lines = [`0018A45C4D1DEF81644B54AB7F969B88D65:1`];
        for (const password of [BREACHED, CLEAN]) {
          if (sha1(password).startsWith(prefix)) lines.push(`${sha1(password).slice(5)}:${password === BREACHED ? 42 : 0}`);
        }
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end(lines.join('\r\n'));
      });
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/range/`;
  }

  close(): void {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    this.server.close();
  }
}

let range: RangeServer;
let smtp: TestSmtpServer;
let t: TestContext;
beforeAll(async () => {
  range = new RangeServer();
  await range.start();
  smtp = await startSmtpServer();
  t = await startTestApp({
    PWNED_PASSWORDS_CHECK: 'true',
    PWNED_PASSWORDS_URL: range.url,
    // Long enough for an answering range API on a machine the whole suite keeps busy (the first
    // request of a process, at 300 ms, sometimes missed it and was let through); the tests of a
    // range API that never answers wait this long.
    PWNED_PASSWORDS_TIMEOUT_MS: '2000',
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}/?ignoreTLS=true`,
  });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
  range?.close();
});
beforeEach(() => {
  range.mode = 'answer';
  range.received.length = 0;
});

function expectBreached(res: { status: number; body: any; headers: Record<string, string> }, field: string): void {
  expectError(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([{ field, message: BREACHED_MESSAGE }]);
}

describe('with PWNED_PASSWORDS_CHECK=true', () => {
  it('refuses a breached password at registration, having sent only the first five characters of its SHA-1, with padding asked for', async () => {
    const email = uniqueEmail();
    expectBreached(await t.post('/api/auth/register', { email, name: 'Ann', password: BREACHED }), 'body.password');
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).execute()).toEqual([]);

    expect(range.received).toHaveLength(1);
    const [sent] = range.received;
    expect(sent.url).toBe(`/range/${sha1(BREACHED).slice(0, 5)}`);
    expect(sent.headers['add-padding']).toBe('true');
    expect(sent.body).toBe('');
    // Neither the password nor any more of its hash went out, in any form.
    const everything = JSON.stringify(sent).toUpperCase();
    for (const secret of [
      BREACHED,
      sha1(BREACHED).slice(5, 15),
      createHash('sha256').update(BREACHED).digest('hex'),
      Buffer.from(BREACHED).toString('base64'),
    ]) {
      expect(everything).not.toContain(secret.toUpperCase());
    }
  });

  it('accepts a password whose suffix the range lists only as padding (count 0)', async () => {
    const res = await t.post('/api/auth/register', { email: uniqueEmail(), name: 'Bob', password: CLEAN });
    expect(res.status).toBe(201);
    expect(range.received.map((r) => r.url)).toEqual([`/range/${sha1(CLEAN).slice(0, 5)}`]);
  });

  it('refuses a breached password at password change, reset, and an admin creating or updating a user', async () => {
    const user = await t.register({ password: CLEAN });
    expectBreached(
      await t.post('/api/auth/change-password', { current_password: CLEAN, new_password: BREACHED }, { token: user.access }),
      'body.new_password',
    );

    expect((await t.post('/api/auth/forgot-password', { email: user.email })).status).toBe(200);
    const mail = await until(() => smtp.to(user.email).find((m) => m.subject === 'Reset your password'), 'the reset mail');
    const token = linkToken(mail, 'reset-password');
    expectBreached(await t.post('/api/auth/reset-password', { token, new_password: BREACHED }), 'body.new_password');
    // Refused before the token was spent: it still sets a clean password.
    expect((await t.post('/api/auth/reset-password', { token, new_password: 'another-clean-passphrase' })).status).toBe(200);

    const admin = await t.adminToken();
    expectBreached(await t.post('/api/users', { email: uniqueEmail(), name: 'Cy', password: BREACHED }, { token: admin }), 'body.password');
    expectBreached(await t.put(`/api/users/${user.id}`, { password: BREACHED }, { token: admin }), 'body.password');
    expect((await t.post('/api/auth/login/json', { email: user.email, password: 'another-clean-passphrase' })).status).toBe(200);
    expect(range.received.filter((r) => r.url === `/range/${sha1(BREACHED).slice(0, 5)}`)).toHaveLength(4);
  });

  it('lets the password through when the range API does not answer within PWNED_PASSWORDS_TIMEOUT_MS, and counts it', async () => {
    const before = await unavailableCount();
    range.mode = 'hang';
    const res = await t.post('/api/auth/register', { email: uniqueEmail(), name: 'Dee', password: BREACHED });
    expect(res.status).toBe(201);
    expect(range.received).toHaveLength(1);
    expect(await unavailableCount()).toBe(before + 1);
  });

  it('lets the password through when the range API fails, and counts it', async () => {
    const before = await unavailableCount();
    range.mode = 'fail';
    expect((await t.post('/api/auth/register', { email: uniqueEmail(), name: 'Eve', password: BREACHED })).status).toBe(201);
    expect(await unavailableCount()).toBe(before + 1);
  });

  async function unavailableCount(): Promise<number> {
    const res = await request(t.app.koa.callback()).get('/metrics');
    const line = res.text.split('\n').find((l) => l.startsWith('pwned_passwords_unavailable_total '));
    return Number(line?.split(' ')[1]);
  }
});

describe('when the range API fails', () => {
  let base: TestContext;
  let app: App;
  const log = captureLog();
  beforeAll(async () => {
    base = await startTestApp({ PWNED_PASSWORDS_CHECK: 'true', PWNED_PASSWORDS_URL: range.url, PWNED_PASSWORDS_TIMEOUT_MS: '300' });
    await base.stop();
    app = await createApp(base.config, { logger: createLogger({ level: 'info' }, log.stream) });
  });
  afterAll(async () => {
    await app?.close();
    await base?.close();
  });

  it('logs that a password went through unchecked, and never the password', async () => {
    range.mode = 'hang';
    const res = await request(app.koa.callback())
      .post('/api/auth/register')
      .send({ email: uniqueEmail(), name: 'Fay', password: BREACHED });
    expect(res.status).toBe(201);
    const warning = log.lines().find((line) => String(line.msg).startsWith('pwned passwords:'));
    expect(warning).toMatchObject({
      level: 40,
      msg: 'pwned passwords: the range API failed or did not answer in time; the password was let through unchecked',
    });
    expect(log.text).not.toContain(BREACHED);
  });
});

describe('with PWNED_PASSWORDS_CHECK off (the default)', () => {
  it('sends nothing anywhere', async () => {
    const plain = await startTestApp({ PWNED_PASSWORDS_URL: range.url });
    try {
      expect((await plain.post('/api/auth/register', { email: uniqueEmail(), name: 'Gus', password: BREACHED })).status).toBe(201);
      expect(range.received).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});
