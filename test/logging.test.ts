import { jest } from '@jest/globals';
import { Writable } from 'node:stream';
import request from 'supertest';
import { createApp, type App } from '../src/app.js';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/logger.js';
import { startTestApp, TEST_SECRET, type TestContext } from './support/app.js';
import { captureLog } from './support/log.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('the access log', () => {
  let base: TestContext;
  let app: App;
  const log = captureLog();

  beforeAll(async () => {
    // The harness app logs nowhere: run one on its database and configuration with a logger writing here.
    base = await startTestApp();
    await base.stop();
    app = await createApp(base.config, { logger: createLogger({ level: 'info' }, log.stream) });
  });
  afterAll(async () => {
    await app?.close();
    await base.close();
  });

  const http = () => request(app.koa.callback());
  const accessLines = () => log.lines().filter((line) => line.msg === 'request');

  it('writes one line per request with its id, operation, status and duration, and echoes the id', async () => {
    const res = await http().get('/health/live').set('X-Request-Id', 'probe-7.a:b');
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe('probe-7.a:b');
    const lines = accessLines().filter((line) => line.requestId === 'probe-7.a:b');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toEqual({
      level: 30,
      time: expect.any(Number),
      requestId: 'probe-7.a:b',
      method: 'GET',
      path: '/health/live',
      operationId: 'healthLive',
      status: 200,
      durationMs: expect.any(Number),
      msg: 'request',
    });
    expect(lines[0].durationMs).toBeGreaterThanOrEqual(0);
  });

  it('makes an id when none or an unusable one is sent, and logs the one it echoes', async () => {
    for (const sent of [undefined, '', 'has spaces in it', 'x'.repeat(129), 'semi;colon']) {
      const req = http().get('/health/live');
      const res = await (sent === undefined ? req : req.set('X-Request-Id', sent));
      const echoed = res.headers['x-request-id'];
      expect(echoed).toMatch(UUID);
      expect(accessLines().filter((line) => line.requestId === echoed)).toHaveLength(1);
    }
  });

  it('logs failures with their status, and unknown routes without an operation', async () => {
    const denied = await http().get('/api/auth/me').set('X-Request-Id', 'denied-1');
    expect(denied.status).toBe(401);
    expect(accessLines().find((line) => line.requestId === 'denied-1')).toMatchObject({ operationId: 'getMe', status: 401 });

    const unknown = await http().get('/no/such/route').set('X-Request-Id', 'unknown-1');
    expect(unknown.status).toBe(404);
    const line = accessLines().find((l) => l.requestId === 'unknown-1')!;
    expect(line).toMatchObject({ path: '/no/such/route', status: 404 });
    expect(line).not.toHaveProperty('operationId');
  });

  it('keeps metrics scrapes out of the info log', async () => {
    expect((await http().get('/metrics').set('X-Request-Id', 'scrape-1')).status).toBe(200);
    expect(accessLines().filter((line) => line.requestId === 'scrape-1')).toEqual([]);
  });
});

describe('metrics scrapes at debug level', () => {
  it('are logged, and a refused scrape is logged at info', async () => {
    const base = await startTestApp({ METRICS_TOKEN: 'scrape-token-0123456789' });
    await base.stop();
    const log = captureLog();
    const app = await createApp(base.config, { logger: createLogger({ level: 'debug' }, log.stream) });
    try {
      expect(
        (
          await request(app.koa.callback())
            .get('/metrics')
            .set('Authorization', 'Bearer scrape-token-0123456789')
            .set('X-Request-Id', 'scrape-2')
        ).status,
      ).toBe(200);
      expect((await request(app.koa.callback()).get('/metrics').set('X-Request-Id', 'scrape-3')).status).toBe(401);
      const lines = log.lines().filter((line) => line.msg === 'request');
      expect(lines.find((line) => line.requestId === 'scrape-2')).toMatchObject({ level: 20, status: 200 });
      expect(lines.find((line) => line.requestId === 'scrape-3')).toMatchObject({ level: 30, status: 401 });
    } finally {
      await app.close();
      await base.close();
    }
  });
});

describe('LOG_FORMAT', () => {
  const env = { SECRET_KEY: TEST_SECRET };

  it('defaults to pretty only in development on a terminal', () => {
    expect(loadConfig({ ...env }, true).logging.format).toBe('pretty');
    expect(loadConfig({ ...env, NODE_ENV: 'development' }, true).logging.format).toBe('pretty');
    expect(loadConfig({ ...env }, false).logging.format).toBe('json');
    expect(loadConfig({ ...env, NODE_ENV: 'production', SMTP_URL: 'smtps://mail.example.com' }, true).logging.format).toBe('json');
    expect(loadConfig({ ...env, NODE_ENV: 'test' }, true).logging.format).toBe('json');
  });

  it('can be set either way, in any case; anything else stops the start', () => {
    expect(loadConfig({ ...env, LOG_FORMAT: 'json' }, true).logging.format).toBe('json');
    expect(
      loadConfig({ ...env, LOG_FORMAT: 'PRETTY', NODE_ENV: 'production', SMTP_URL: 'smtps://mail.example.com' }, false).logging.format,
    ).toBe('pretty');
    expect(() => loadConfig({ ...env, LOG_FORMAT: 'xml' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...env, LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT must be one of json, pretty, got "xml"/);
  });

  it('pretty writes readable lines, with secrets redacted as in JSON', async () => {
    let text = '';
    const destination = new Writable({
      write(chunk, _encoding, done) {
        text += chunk.toString();
        done();
      },
    });
    const logger = createLogger({ level: 'info', format: 'pretty' }, destination);
    logger.info({ requestId: 'pretty-1', password: 'hunter2-hunter2', status: 200 }, 'request');
    await new Promise((resolve) => setImmediate(resolve));
    expect(text).toMatch(/INFO.*request/);
    expect(text).toContain('pretty-1');
    expect(text).toContain('[redacted]');
    expect(text).not.toContain('hunter2');
    expect(() => JSON.parse(text.trim())).toThrow();
    expect(text.trim().split('\n')).toHaveLength(1);
  });

  it('falls back to JSON, with a warning, when pino-pretty is not installed', () => {
    let text = '';
    jest.isolateModules(() => {
      jest.doMock('pino-pretty', () => {
        throw new Error("Cannot find module 'pino-pretty'");
      });
      const { createLogger: isolated } = jest.requireActual<typeof import('../src/logger.js')>('../src/logger');
      const logger = isolated({ level: 'info', format: 'pretty' }, { write: (chunk: string) => void (text += chunk) });
      logger.info({ requestId: 'json-1' }, 'request');
    });
    jest.dontMock('pino-pretty');
    const lines = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, msg: expect.stringContaining('pino-pretty is not installed') }),
      expect.objectContaining({ level: 30, requestId: 'json-1', msg: 'request' }),
    ]);
  });
});
