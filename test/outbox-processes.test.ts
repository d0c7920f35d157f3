import { request as httpRequest } from 'node:http';
import { Client } from 'pg';
import { suiteDatabase, uniqueEmail, type SuiteDatabase } from './support/app.js';
import { startServer, type Running } from './support/server.js';
import { startSmtpServer, type TestSmtpServer } from './support/smtp.js';
import { until } from './support/wait.js';

// The mail outbox with several service processes on one PostgreSQL database and a slow SMTP relay:
// each message goes out once, under a Message-ID taken from its outbox row.

const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres' ? describe : describe.skip;

function post(port: number, path: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = httpRequest(
      { host: '127.0.0.1', port, method: 'POST', path, agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const listening = (line: Record<string, any>) => typeof line.msg === 'string' && line.msg.startsWith('listening on');

onPostgres('mail outbox with two processes', () => {
  let database: SuiteDatabase;
  let smtp: TestSmtpServer;
  let client: Client;
  const servers: Running[] = [];

  beforeAll(async () => {
    database = await suiteDatabase();
    // Each message takes longer to be accepted than a lease lasts: a lease must be held for the whole send.
    smtp = await startSmtpServer(0, { answerAfterMs: 2000 });
  });
  afterAll(async () => {
    for (const server of servers) server.child.kill('SIGKILL');
    await client?.end();
    await smtp.close();
    await database.drop();
  });

  it('sends every message exactly once, with a Message-ID from its row', async () => {
    const env = {
      ...database.env,
      SMTP_URL: smtp.url,
      APP_URL: 'https://app.example.test',
      MAIL_POLL_INTERVAL_MS: '100',
      MAIL_LEASE_MS: '600',
      LOG_LEVEL: 'debug',
    };
    // The first one migrates the database; the second starts on it.
    servers.push(await startServer(env));
    await servers[0].waitFor(listening);
    servers.push(await startServer(env));
    await servers[1].waitFor(listening);
    client = new Client({ connectionString: database.env.DATABASE_URL });
    await client.connect();

    const emails = Array.from({ length: 6 }, (_, i) => uniqueEmail(`outbox-${i}`));
    for (const [i, email] of emails.entries()) {
      const port = servers[i % 2].port;
      expect(await post(port, '/api/auth/register', { email, password: 'outbox-password-1', name: 'Outbox' })).toBe(201);
      expect(await post(port, '/api/auth/forgot-password', { email })).toBe(200);
    }

    const rows = async () =>
      (
        await client.query<{ id: number; recipient: string; attempts: number; sent_at: Date | null }>(
          'select id, recipient, attempts, sent_at from mail_outbox order by id',
        )
      ).rows;
    // A verification mail for each registration and a reset mail for each request; the reset mail
    // is queued after the answer (so that the answer's timing says nothing), so this waits for it too.
    const queued = emails.length * 2;
    await until(
      async () => {
        const now = await rows();
        const ids = new Set(smtp.messages.map((m) => m.messageId));
        return now.length === queued && now.every((row) => row.sent_at !== null) && ids.size >= queued;
      },
      'every queued message delivered and received',
      60_000,
      100,
    );
    // A stop waits for the send in hand: once both have exited, nothing more can arrive.
    for (const server of servers) server.child.kill('SIGTERM');
    for (const server of servers) expect(await server.exited).toBe(0);

    const delivered = await rows();
    expect(delivered).toHaveLength(queued);
    expect(smtp.messages).toHaveLength(delivered.length);
    for (const row of delivered) {
      expect(row.attempts).toBe(1);
      const copies = smtp.messages.filter((m) => m.messageId === `<outbox-${row.id}@app.example.test>`);
      expect(copies).toHaveLength(1);
      expect(copies[0].to).toEqual([row.recipient]);
    }
    const deliveredLines = servers.flatMap((server) => server.lines.filter((line) => line.msg === 'mail outbox: delivered'));
    expect(deliveredLines.map((line) => line.mailId).sort((a, b) => a - b)).toEqual(delivered.map((row) => row.id));
    // Both processes took part.
    expect(servers.every((server) => server.lines.some((line) => line.msg === 'mail outbox: delivered'))).toBe(true);
  });
});
