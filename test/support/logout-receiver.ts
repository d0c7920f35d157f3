import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedLogout {
  contentType: string | undefined;
  /** The form's `logout_token`. */
  token: string;
  /** The token's payload as sent (unverified: the test verifies it against the JWK Set). */
  claims: Record<string, any>;
  /** The status it was answered with; 0 while unanswered. */
  status: number;
}

/** A client's back-channel logout URI that the test runs (OpenID Connect Back-Channel Logout 1.0). */
export interface LogoutReceiver {
  /** `http://127.0.0.1:PORT/backchannel-logout`. */
  url: string;
  /** Every request, in order of arrival. */
  received: ReceivedLogout[];
  /** The status each request is answered with (200 unless set); null never answers. */
  answer: (request: ReceivedLogout, index: number) => number | null;
  /** The logout tokens received with this `sid`. */
  withSid(sid: string): ReceivedLogout[];
  close(): Promise<void>;
}

export async function startLogoutReceiver(): Promise<LogoutReceiver> {
  const receiver: LogoutReceiver = {
    url: '',
    received: [],
    answer: () => 200,
    withSid: (sid) => receiver.received.filter((request) => request.claims.sid === sid),
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
      const token = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('logout_token') ?? '';
      let claims: Record<string, any> = {};
      try {
        claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, any>;
      } catch {
        // Not a JWT: the test sees empty claims.
      }
      const request: ReceivedLogout = { contentType: req.headers['content-type'], token, claims, status: 0 };
      const status = receiver.answer(request, receiver.received.length);
      receiver.received.push(request);
      if (status === null) return;
      request.status = status;
      res.writeHead(status, { 'cache-control': 'no-store' }).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/backchannel-logout`;
  return receiver;
}
