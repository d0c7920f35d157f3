import { connect, type Socket } from 'node:net';
import request from 'supertest';
import { loadConfig } from '../src/config/index.js';
import { createApp, type App } from '../src/app.js';
import { createLogger } from '../src/logger.js';
import { startTestApp, suiteDatabase, TEST_SECRET, uniqueEmail, type SuiteDatabase, type TestContext } from './support/app.js';
import { problemsOf } from './support/config.js';
import { expectError } from './support/expect.js';
import { captureLog } from './support/log.js';
import { startServer, type Running } from './support/server.js';
import { startSmtpServer, type TestSmtpServer } from './support/smtp.js';
import { until } from './support/wait.js';

// What NODE_ENV=production refuses or withholds, and the HTTP server's own limits, each attacked.

const PRODUCTION = { NODE_ENV: 'production', SECRET_KEY: TEST_SECRET };
const listening = (line: Record<string, any>) => typeof line.msg === 'string' && line.msg.startsWith('listening on');

describe('mail in production', () => {
  it('refuses to start without SMTP_URL, naming MAIL_LOG_LINKS as the way to accept links in the log', () => {
    expect(problemsOf(PRODUCTION)).toEqual([
      expect.stringMatching(/^SMTP_URL is required when NODE_ENV=production: .*reset and verification links.*MAIL_LOG_LINKS=true/),
    ]);
    expect(loadConfig({ ...PRODUCTION, MAIL_LOG_LINKS: 'true' }).mail.logLinks).toBe(true);
    expect(loadConfig({ ...PRODUCTION, SMTP_URL: 'smtps://mail.example.com' }).mail.logLinks).toBe(false);
    // Outside production the log still takes the place of a mail server, links included.
    expect(loadConfig({}).mail.logLinks).toBe(true);
    expect(problemsOf({ MAIL_LOG_LINKS: 'perhaps' })).toEqual([expect.stringContaining('MAIL_LOG_LINKS must be true or false')]);
  });

  it('the real process exits 1 with that message, before it listens', async () => {
    const server = await startServer({ ...PRODUCTION, DATA_DIR: 'memory://' });
    try {
      expect(await server.exited).toBe(1);
      expect(server.stderr()).toMatch(/^Invalid configuration: SMTP_URL is required when NODE_ENV=production.*\n$/);
      expect(server.lines.some(listening)).toBe(false);
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('requires STARTTLS of an smtp:// server unless the URL says ignoreTLS=true; smtps:// is TLS already', () => {
    const requireTls = (url: string, env: Record<string, string> = PRODUCTION) => loadConfig({ ...env, SMTP_URL: url }).mail.smtpRequireTls;
    expect(requireTls('smtp://mail.example.com:587')).toBe(true);
    expect(requireTls('smtp://user:pass@mail.example.com:587/?pool=true')).toBe(true);
    expect(requireTls('smtp://relay.internal:25/?ignoreTLS=true')).toBe(false);
    expect(requireTls('smtps://mail.example.com:465')).toBe(false);
    expect(requireTls('smtp://mail.example.com:587', {})).toBe(false);
    // Turning the requirement off in a way that still sends in clear when STARTTLS is stripped is refused.
    expect(problemsOf({ ...PRODUCTION, SMTP_URL: 'smtp://mail.example.com:587/?requireTLS=false' })).toEqual([
      expect.stringContaining('SMTP_URL says requireTLS=false'),
    ]);
  });

  describe('delivery', () => {
    let plain: TestSmtpServer;
    let tls: TestSmtpServer;
    beforeAll(async () => {
      plain = await startSmtpServer();
      tls = await startSmtpServer(0, { starttls: true });
    });
    afterAll(async () => {
      await plain.close();
      await tls.close();
    });

    const outboxRow = (t: TestContext, recipient: string) =>
      t.db.selectFrom('mail_outbox').selectAll().where('recipient', '=', recipient).executeTakeFirst();
    /** The recipient's outbox row once a failed delivery has been recorded on it. */
    const failedDelivery = (t: TestContext, recipient: string) =>
      until(async () => {
        const found = await outboxRow(t, recipient);
        return found?.last_error ? found : undefined;
      }, 'the failed delivery recorded in the outbox');

    it('sends nothing to a server that offers no STARTTLS: the mail stays queued with the error', async () => {
      const t = await startTestApp({ ...PRODUCTION, SMTP_URL: plain.url });
      try {
        const user = await t.register({ email: uniqueEmail('cleartext') });
        const row = await failedDelivery(t, user.email);
        expect(row).toMatchObject({ sent_at: null, failed_at: null, attempts: 1 });
        expect(row.last_error).toMatch(/STARTTLS/);
        // The message is still there, sealed, for a later attempt.
        expect(row.payload).not.toBeNull();
        expect(plain.to(user.email)).toEqual([]);
      } finally {
        await t.close();
      }
    });

    it('delivers to that server when the URL says ignoreTLS=true', async () => {
      const t = await startTestApp({ ...PRODUCTION, SMTP_URL: `${plain.url}/?ignoreTLS=true` });
      try {
        const user = await t.register({ email: uniqueEmail('relay') });
        const mail = await plain.waitFor((m) => m.to.includes(user.email));
        expect(mail.secure).toBe(false);
        await until(async () => (await outboxRow(t, user.email))?.sent_at, 'the outbox row marked sent');
      } finally {
        await t.close();
      }
    });

    it('delivers over STARTTLS to a server that offers it (its self-signed certificate trusted through the URL)', async () => {
      const t = await startTestApp({ ...PRODUCTION, SMTP_URL: `${tls.url}/?tls.rejectUnauthorized=false` });
      try {
        const user = await t.register({ email: uniqueEmail('starttls') });
        const mail = await tls.waitFor((m) => m.to.includes(user.email));
        expect(mail.secure).toBe(true);
      } finally {
        await t.close();
      }
    });

    it('refuses a self-signed certificate that is not trusted', async () => {
      const t = await startTestApp({ ...PRODUCTION, SMTP_URL: tls.url });
      try {
        const user = await t.register({ email: uniqueEmail('untrusted') });
        const row = await failedDelivery(t, user.email);
        expect(row.sent_at).toBeNull();
        expect(row.last_error).toMatch(/certificate/i);
        expect(tls.to(user.email)).toEqual([]);
      } finally {
        await t.close();
      }
    });
  });

  describe('the log in place of a mail server', () => {
    async function registerAndReadLog(env: Record<string, string>): Promise<Record<string, any>> {
      const database = await suiteDatabase();
      const log = captureLog();
      const config = loadConfig({ SECRET_KEY: TEST_SECRET, BCRYPT_COST: '4', RATE_LIMIT_ENABLED: 'false', ...database.env, ...env });
      let app: App | undefined;
      try {
        app = await createApp(config, { logger: createLogger({ level: 'info' }, log.stream) });
        const email = uniqueEmail('logged');
        const res = await request(app.koa.callback()).post('/api/auth/register').send({ email, password: 'password-123', name: 'Logged' });
        expect(res.status).toBe(201);
        return await until(() => log.lines().find((line) => line.mail?.to === email), 'the mail written to the log');
      } finally {
        await app?.close();
        await database.drop();
      }
    }

    it('holds the link only when MAIL_LOG_LINKS allows it', async () => {
      const withheld = await registerAndReadLog({ MAIL_LOG_LINKS: 'false' });
      expect(withheld.msg).toBe('mail not sent (no SMTP_URL); its link is not logged (MAIL_LOG_LINKS=false)');
      expect(withheld.mail).toEqual({ to: expect.any(String), subject: expect.any(String) });
      expect(JSON.stringify(withheld)).not.toContain('token=');

      const chosen = await registerAndReadLog({ ...PRODUCTION, MAIL_LOG_LINKS: 'true' });
      expect(chosen.mail.link).toMatch(/\/verify-email\?token=/);
    });
  });

  it('a production process writes no link to its log when delivery fails, and withholds /metrics with a warning', async () => {
    const smtp = await startSmtpServer();
    const database = await suiteDatabase();
    let server: Running | undefined;
    try {
      server = await startServer({ ...database.env, NODE_ENV: 'production', SMTP_URL: smtp.url });
      await server.waitFor(listening);
      expect(server.lines.filter((line) => line.level === 40).map((line) => line.msg)).toContain(
        '/metrics is off: in production it needs METRICS_TOKEN (or METRICS_PUBLIC=true to serve it to anyone)',
      );
      const metrics = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(metrics.status).toBe(404);
      const envelope = (await metrics.json()) as { error: { code: string } };
      expect(envelope.error.code).toBe('NOT_FOUND');

      const email = uniqueEmail('prodlog');
      const res = await fetch(`http://127.0.0.1:${server.port}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'password-123', name: 'Prod' }),
      });
      expect(res.status).toBe(201);
      const failed = await server.waitFor((line) => line.msg === 'mail outbox: delivery failed');
      expect(failed.err).toMatch(/STARTTLS/);
      expect(smtp.messages).toEqual([]);
      expect(server.lines.map((line) => JSON.stringify(line)).join('\n')).not.toMatch(/token=|verify-email\?/);
    } finally {
      server?.child.kill('SIGKILL');
      await server?.exited;
      await smtp.close();
      await database.drop();
    }
  });
});

describe('/metrics in production', () => {
  it('is off without METRICS_TOKEN or METRICS_PUBLIC=true, and as before outside production', () => {
    const prod = { ...PRODUCTION, SMTP_URL: 'smtps://mail.example.com' };
    expect(loadConfig(prod).metrics).toMatchObject({ enabled: false, withheld: true });
    expect(loadConfig({ ...prod, METRICS_TOKEN: 'scrape-secret' }).metrics).toMatchObject({ enabled: true, withheld: false });
    expect(loadConfig({ ...prod, METRICS_PUBLIC: 'true' }).metrics).toMatchObject({ enabled: true, withheld: false });
    expect(loadConfig({ ...prod, METRICS_ENABLED: 'false' }).metrics).toMatchObject({ enabled: false, withheld: false });
    expect(loadConfig({}).metrics).toMatchObject({ enabled: true, withheld: false });
  });

  it('answers 404 to an anonymous scrape, 401 without the token, and the metrics with it', async () => {
    const env = { ...PRODUCTION, SMTP_URL: 'smtps://127.0.0.1:1' };
    const scrape = (t: TestContext, token?: string) => {
      const req = request(t.app.koa.callback()).get('/metrics');
      return token ? req.set('Authorization', `Bearer ${token}`) : req;
    };
    const closed = await startTestApp(env);
    try {
      expectError(await closed.get('/metrics'), 404, 'NOT_FOUND');
    } finally {
      await closed.close();
    }
    const guarded = await startTestApp({ ...env, METRICS_TOKEN: 'scrape-secret' });
    try {
      const anonymous = await scrape(guarded);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.error.code).toBe('UNAUTHORIZED');
      expect((await scrape(guarded, 'scrape-secret')).status).toBe(200);
    } finally {
      await guarded.close();
    }
    const open = await startTestApp({ ...env, METRICS_PUBLIC: 'true' });
    try {
      expect((await scrape(open)).status).toBe(200);
    } finally {
      await open.close();
    }
  });
});

describe('names', () => {
  let t: TestContext;
  let admin: string;
  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
  });
  afterAll(() => t.close());

  const NAME_MESSAGE = 'must have a visible character and no control or bidirectional-override characters';
  const expectNameRefused = (res: Awaited<ReturnType<TestContext['post']>>) => {
    expectError(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'body.name', message: NAME_MESSAGE }]);
  };
  const usersWith = (email: string) => t.db.selectFrom('users').select('id').where('email', '=', email).execute();

  // An override makes "Evil\u202Enimda" read "Evil admin" reversed; the rest forge lines or hide text.
  const HOSTILE = [
    'Evil\u202Enimda',
    'Ada\u202Dx',
    '\u2067Ada\u2069',
    'Ada\u2066',
    'Ada\u200F',
    'Ada\u200E',
    'Ada\u061C',
    'Ada\u202A',
    'Ada\nINFO admin logged in',
    'Ada\u0007',
    'Ada\u007F',
    'Ada\u0085',
    'Ada\u009B31m',
    '\u001B[31mAda',
    'A\tda',
    // Line separators: the pattern leaves them out (they would end a JavaScript regex literal), the service does not.
    'Ada\u2028INFO admin logged in',
    'Ada\u2029Lovelace',
    '\u2028',
    ' \u2029\u2028\t',
    'A\u2028\u202Eda',
  ];

  it.each(HOSTILE.map((name) => [JSON.stringify(name), name]))('registration refuses %s and creates no account', async (_label, name) => {
    const email = uniqueEmail('bidi');
    expectNameRefused(await t.post('/api/auth/register', { email, password: 'password-123', name }));
    expect(await usersWith(email)).toEqual([]);
  });

  it('an admin cannot create a user with such a name', async () => {
    const email = uniqueEmail('bidi-admin');
    expectNameRefused(await t.post('/api/users', { name: 'Mallory\u202Egnp.exe', email, password: 'password-123' }, { token: admin }));
    expect(await usersWith(email)).toEqual([]);
  });

  it('PUT cannot rename to such a name, and the old name stays', async () => {
    const user = await t.register({ name: 'Plain Name' });
    for (const name of ['Plain\u2066Name', 'Plain\u0000Name', 'Plain\u009FName']) {
      expectNameRefused(await t.put(`/api/users/${user.id}`, { name }, { token: user.access }));
      expectNameRefused(await t.put(`/api/users/${user.id}`, { name }, { token: admin }));
    }
    const row = await t.db.selectFrom('users').select('name').where('id', '=', user.id).executeTakeFirstOrThrow();
    expect(row.name).toBe('Plain Name');
  });

  it('an API key or a factor named with line separators alone is refused, and none is made', async () => {
    const user = await t.register();
    for (const name of ['\u2028', 'Nightly\u2029export']) {
      expectNameRefused(await t.post('/api/auth/api-keys', { name }, { token: user.access }));
    }
    const blank = await t.post('/api/auth/mfa/totp', { name: '\u2028\u2029' }, { token: user.access });
    expectError(blank, 422, 'VALIDATION_ERROR');
    expect(blank.body.error.details).toEqual([{ field: 'body.name', message: 'must not be blank' }]);
    expect(await t.db.selectFrom('api_keys').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
    expect(await t.db.selectFrom('mfa_factors').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
  });

  it('accepts names in any script, and white space around a name that trimming removes', async () => {
    for (const name of [
      'محمد بن موسى',
      'דוד בן-גוריון',
      'Zoë Ōtsuka-Łukasiewicz',
      '李小龙',
      'Ada 👩‍💻',
      '\tAda Lovelace\n',
      '\u2028Ada Lovelace\u2029',
    ]) {
      const res = await t.post('/api/auth/register', { email: uniqueEmail('script'), password: 'password-123', name });
      expect(res.status).toBe(201);
      expect(res.body.data.user.name).toBe(name.trim());
    }
  });
});

describe('validation errors', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('list at most 20 details and say how many problems there were', async () => {
    const email = uniqueEmail('flood');
    const body: Record<string, unknown> = { email, password: 'password-123', name: 'Flood' };
    for (let i = 0; i < 500; i++) body[`extra_${i}`] = i;
    const res = await t.post('/api/auth/register', body);
    expectError(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.message).toBe('Request validation failed: 500 problems, the first 20 listed');
    expect(res.body.error.details).toHaveLength(20);
    expect(res.body.error.details[0]).toEqual({ field: 'body.extra_0', message: 'is not allowed' });
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).execute()).toEqual([]);
  });

  it('keep the plain message up to 20', async () => {
    const body: Record<string, unknown> = { email: uniqueEmail('few'), password: 'password-123', name: 'Few' };
    for (let i = 0; i < 20; i++) body[`extra_${i}`] = i;
    const res = await t.post('/api/auth/register', body);
    expectError(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.message).toBe('Request validation failed');
    expect(res.body.error.details).toHaveLength(20);
  });
});

interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Writes `payload` on a socket of its own and reads until the server closes it. */
function rawExchange(port: number, payload: string | Buffer, { end = false } = {}): Promise<{ text: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve({ text, socket }));
    socket.on('connect', () => (end ? socket.end(payload) : socket.write(payload)));
  });
}

function parse(text: string): RawReply {
  const split = text.indexOf('\r\n\r\n');
  expect(split).toBeGreaterThan(0);
  const [statusLine, ...headerLines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = text.slice(split + 4);
  expect(Buffer.byteLength(body)).toBe(Number(headers['content-length']));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

function expectEnveloped(reply: RawReply, status: number, code: string, message: string): void {
  expect(reply.status).toBe(status);
  expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(reply.headers.connection).toBe('close');
  expect(reply.body).toEqual({ success: false, error: { code, message } });
}

describe('the HTTP server', () => {
  it('has documented timeouts and a connection cap, and keeps headers within the request timeout', () => {
    expect(loadConfig({}).server).toMatchObject({ headersTimeoutMs: 20_000, requestTimeoutMs: 60_000, maxConnections: 10_000 });
    expect(problemsOf({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' })).toEqual([
      'HEADERS_TIMEOUT_MS (5000) must not exceed REQUEST_TIMEOUT_MS (1000)',
    ]);
    expect(problemsOf({ MAX_CONNECTIONS: '0' })).toEqual(['MAX_CONNECTIONS must be between 1 and 1000000, got 0']);
  });

  describe('answers in the envelope before the app sees the request', () => {
    let server: Running;
    let database: SuiteDatabase;
    beforeAll(async () => {
      database = await suiteDatabase();
      server = await startServer({ ...database.env, HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '1000' });
      await server.waitFor(listening);
    }, 60_000);
    afterAll(async () => {
      server?.child.kill('SIGKILL');
      await server?.exited;
      await database?.drop();
    });

    it('431 for headers over the limit', async () => {
      const { text } = await rawExchange(server.port, `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
      expectEnveloped(parse(text), 431, 'HEADERS_TOO_LARGE', 'Request headers too large');
    });

    it('400 for a malformed request line', async () => {
      const { text } = await rawExchange(server.port, 'GET /health/live HTTP/1.1 and more\r\nHost: x\r\n\r\n');
      expectEnveloped(parse(text), 400, 'BAD_REQUEST', 'Malformed request');
      const garbage = await rawExchange(server.port, '\u0001\u0002 nonsense\r\n\r\n');
      expectEnveloped(parse(garbage.text), 400, 'BAD_REQUEST', 'Malformed request');
    });

    it('408 for headers that do not arrive in time (a slow-loris client)', async () => {
      const { text } = await rawExchange(server.port, 'GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n');
      expectEnveloped(parse(text), 408, 'REQUEST_TIMEOUT', 'Request not received in time');
    });

    it('still serves a request that arrives whole', async () => {
      const { text } = await rawExchange(server.port, 'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      const reply = parse(text);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ success: true, data: { status: 'alive' } });
    });
  });

  it('closes connections over MAX_CONNECTIONS at once, and serves again when one is freed', async () => {
    const database = await suiteDatabase();
    const server = await startServer({ ...database.env, MAX_CONNECTIONS: '2' });
    const held: Socket[] = [];
    try {
      await server.waitFor(listening);
      // Two keep-alive connections, each answered once, so the server has certainly counted both.
      for (let i = 0; i < 2; i++) {
        const socket = connect(server.port, '127.0.0.1');
        held.push(socket);
        const answered = new Promise<string>((resolve) => socket.once('data', (chunk) => resolve(chunk.toString())));
        socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n');
        expect(await answered).toMatch(/^HTTP\/1\.1 200 /);
      }
      const refused = await rawExchange(server.port, 'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').catch(
        (error: NodeJS.ErrnoException) => ({
          text: '',
          error: error.code,
        }),
      );
      expect(refused.text).toBe('');
      const warned = await server.waitFor((line) => line.msg === 'connections refused: MAX_CONNECTIONS reached');
      expect(warned).toMatchObject({ level: 40, maxConnections: 2, dropped: 1 });

      held.shift()!.destroy();
      const served = await until(async () => {
        const { text } = await rawExchange(server.port, 'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').catch(() => ({
          text: '',
        }));
        return text.startsWith('HTTP/1.1 200 ') && text;
      }, 'a connection served once one was freed');
      expect(parse(served).body.data.status).toBe('alive');
    } finally {
      for (const socket of held) socket.destroy();
      server.child.kill('SIGKILL');
      await server.exited;
      await database.drop();
    }
  });
});
