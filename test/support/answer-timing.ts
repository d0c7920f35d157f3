import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { startTestApp, uniqueEmail, type TestContext } from './app.js';

// An operation that answers before it looks the e-mail up takes the same time for an existing account
// and for an unknown address. The client runs on a thread of its own, as a remote client would: the
// work the service does after answering cannot delay the client's reading of the answer. Each sample
// waits for that work (`settled`), so that it never weighs on the next sample.
export interface AnswerTiming {
  /** The operation's path; its JSON body is `{ email }`. */
  path: string;
  status: number;
  message: string;
  /** Resolves when the work the service does after answering is done. */
  settled(t: TestContext): Promise<void>;
}

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
    { host: '127.0.0.1', port: workerData.port, path: workerData.path, method: 'POST', agent,
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

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Declares the two timing tests of an operation that must not tell whether an address has an account. */
export function answersInTheSameTime(operation: AnswerTiming): void {
  let t: TestContext;
  let server: Server;
  let client: Worker;
  beforeAll(async () => {
    t = await startTestApp();
    server = t.app.koa.listen(0, '127.0.0.1');
    await once(server, 'listening');
    client = new Worker(CLIENT, { eval: true, workerData: { port: (server.address() as AddressInfo).port, path: operation.path } });
  });
  afterAll(async () => {
    await client?.terminate();
    server?.closeAllConnections();
    server?.close();
    await t.close();
  });

  async function timed(email: string): Promise<number> {
    const answered = once(client, 'message') as Promise<[{ status: number; text: string; ms: number }]>;
    client.postMessage(email);
    const [{ status, text, ms }] = await answered;
    expect(status).toBe(operation.status);
    expect(JSON.parse(text)).toEqual({ success: true, data: { message: operation.message } });
    await operation.settled(t);
    return ms;
  }

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
      const res = await t.post(operation.path, { email });
      expect(res.status).toBe(operation.status);
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
}
