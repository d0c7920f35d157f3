import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { startTestApp, uniqueEmail, type TestContext } from './support/app';

// A request for an e-mailed code answers before it looks the address up, so an existing account
// and an unknown e-mail take the same time, though only the account is sent a code. The client runs
// on a thread of its own, as a remote client would: the work the service does after answering
// cannot delay the client's reading of the answer. Each sample waits for that work, so that it
// never weighs on the next sample.
const ROUNDS = 151;
const WARM_UP = 20;

const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
parentPort.on('message', (email) => {
  const body = JSON.stringify({ email });
  const started = process.hrtime.bigint();
  const req = http.request(
    { host: '127.0.0.1', port: workerData.port, path: '/api/auth/email-code', method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
    (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => parentPort.postMessage({ status: res.statusCode, text, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
    },
  );
  req.end(body);
});
`;

let t: TestContext;
let server: Server;
let client: Worker;
beforeAll(async () => {
  t = await startTestApp();
  server = t.app.koa.listen(0, '127.0.0.1');
  await once(server, 'listening');
  client = new Worker(CLIENT, { eval: true, workerData: { port: (server.address() as AddressInfo).port } });
});
afterAll(async () => {
  await client?.terminate();
  server?.closeAllConnections();
  server?.close();
  await t.close();
});

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function timed(email: string): Promise<number> {
  const answered = once(client, 'message') as Promise<[{ status: number; text: string; ms: number }]>;
  client.postMessage(email);
  const [{ status, text, ms }] = await answered;
  expect(status).toBe(202);
  expect(JSON.parse(text)).toEqual({ success: true, data: { message: 'If the address can sign in, a code has been sent to it' } });
  await t.app.services.emailCode.settled();
  return ms;
}

describe('email-code timing', () => {
  it('takes as long for an existing account as for an unknown e-mail (medians within 25%)', async () => {
    const users = [await t.register(), await t.register(), await t.register()];
    for (let i = 0; i < WARM_UP; i++) {
      await timed(users[i % users.length].email);
      await timed(uniqueEmail('nobody'));
    }
    const known: number[] = [];
    const unknown: number[] = [];
    // Interleaved, in alternating order, so that whatever else the machine does weighs on both alike.
    for (let i = 0; i < ROUNDS; i++) {
      const sample = [
        async () => known.push(await timed(users[i % users.length].email)),
        async () => unknown.push(await timed(uniqueEmail('nobody'))),
      ];
      if (i % 2) sample.reverse();
      for (const take of sample) await take();
    }
    const [a, b] = [median(known), median(unknown)];
    expect(Math.abs(a - b) / Math.max(a, b)).toBeLessThan(0.25);
  });

  it('takes about as long for an existing e-mail as for an unknown one, through the in-process client', async () => {
    const u = await t.register();
    const unknown = uniqueEmail('nobody');
    const time = async (email: string) => {
      const start = process.hrtime.bigint();
      const res = await t.post('/api/auth/email-code', { email });
      expect(res.status).toBe(202);
      return Number(process.hrtime.bigint() - start) / 1e6;
    };
    await time(u.email);
    await time(unknown); // warm-up
    const existing: number[] = [];
    const missing: number[] = [];
    for (let i = 0; i < 7; i++) {
      existing.push(await time(u.email));
      missing.push(await time(unknown));
    }
    const [a, b] = [median(existing), median(missing)];
    expect(a).toBeLessThan(3 * b + 50);
    expect(b).toBeLessThan(3 * a + 50);
  });
});
