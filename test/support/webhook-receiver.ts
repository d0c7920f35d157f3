import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  /** The `webhook-id` header. */
  id: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  payload: { type: string; timestamp: string; data: any };
  /** The trusted secrets whose `Webhook.verify` accepted the request. */
  verifiedBy: string[];
  /** The status it was answered with; 0 while unanswered. */
  status: number;
}

/** A webhook endpoint the test runs: a node:http server that checks every request's signature. */
export interface WebhookReceiver {
  /** `http://127.0.0.1:PORT/hook`. */
  url: string;
  port: number;
  /** Every request, in order of arrival. */
  received: ReceivedWebhook[];
  /** TCP connections accepted, whether or not a request came on them. */
  connections: number;
  /** The status each request is answered with (204 unless set); a 3xx points at `/elsewhere`; null never answers. */
  answer: (request: ReceivedWebhook, index: number) => number | null;
  /** Verifies later requests with this secret too (as a Standard Webhooks receiver would). */
  trust(secret: string): void;
  /** The requests of one event type about one user. */
  about(type: string, userId: number): ReceivedWebhook[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const secrets: string[] = [];
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    received: [],
    connections: 0,
    answer: () => 204,
    trust: (secret) => secrets.push(secret),
    about: (type, userId) =>
      receiver.received.filter((r) => r.payload.type === type && (r.payload.data.id === userId || r.payload.data.user?.id === userId)),
    close: async () => {
      const closed = once(server, 'close');
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = req.headers as Record<string, string>;
      const verifiedBy = secrets.filter((secret) => {
        try {
          new Webhook(secret).verify(body, headers);
          return true;
        } catch {
          return false;
        }
      });
      const request: ReceivedWebhook = {
        id: headers['webhook-id'],
        path: req.url ?? '',
        headers: req.headers,
        body,
        payload: JSON.parse(body) as ReceivedWebhook['payload'],
        verifiedBy,
        status: 0,
      };
      const status = receiver.answer(request, receiver.received.length);
      receiver.received.push(request);
      if (status === null) return;
      request.status = status;
      if (request.status >= 300 && request.status < 400) res.setHeader('Location', `http://127.0.0.1:${receiver.port}/elsewhere`);
      res.writeHead(request.status).end();
    });
  });
  server.on('connection', () => receiver.connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  return receiver;
}
