import type { Socket } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** A message accepted by the test SMTP server, decoded. */
export interface ReceivedMail {
  /** Envelope recipients (RCPT TO), as given by the client. */
  to: string[];
  /** The From header as text (e.g. `"Name" <a@b>`), or the envelope sender if there is none. */
  from: string;
  subject: string;
  text: string;
  html: string;
  receivedAt: number;
  /** The message source as received. */
  raw: string;
  /** The Message-ID header, as sent. */
  messageId: string | undefined;
  /** Whether the session had been upgraded to TLS (STARTTLS) when the message was sent. */
  secure: boolean;
}

/** A running test SMTP server and the messages it has accepted. */
export interface TestSmtpServer {
  port: number;
  /** `smtp://127.0.0.1:<port>` */
  url: string;
  /** Every message accepted so far, in order. */
  messages: ReceivedMail[];
  /** Resolves with the first message (already received or arriving later) for which predicate holds; rejects after timeoutMs (default 5000) with a message listing what was received. */
  waitFor(predicate: (m: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  /** Messages addressed to this recipient (case-insensitive). */
  to(address: string): ReceivedMail[];
  close(): Promise<void>;
}

interface Waiter {
  predicate: (m: ReceivedMail) => boolean;
  resolve: (m: ReceivedMail) => void;
}

/** Starts on 127.0.0.1; port 0 = any free port; a given port lets a test bring a server back on the port a service is already configured with. Plain SMTP, no TLS (disabledCommands STARTTLS) unless `starttls` offers it with smtp-server's built-in self-signed certificate; any AUTH accepted (authOptional true, onAuth accepting every user). With `answerAfterMs`, each message is answered (and recorded) only that long after its data has arrived, as a slow relay does. */
export async function startSmtpServer(
  port = 0,
  { starttls = false, answerAfterMs = 0 }: { starttls?: boolean; answerAfterMs?: number } = {},
): Promise<TestSmtpServer> {
  const messages: ReceivedMail[] = [];
  const waiters = new Set<Waiter>();
  const sockets = new Set<Socket>();

  const server = new SMTPServer({
    disabledCommands: starttls ? [] : ['STARTTLS'],
    authOptional: true,
    logger: false,
    closeTimeout: 500,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username ?? 'anonymous' });
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', callback);
      stream.on(
        'end',
        () =>
          void (async () => {
            try {
              if (answerAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, answerAfterMs));
              const raw = Buffer.concat(chunks);
              const parsed = await simpleParser(raw);
              const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
              const mail: ReceivedMail = {
                to: session.envelope.rcptTo.map((r) => r.address),
                from: parsed.from?.text || envelopeFrom,
                subject: parsed.subject ?? '',
                text: parsed.text ?? '',
                html: parsed.html || '',
                receivedAt: Date.now(),
                raw: raw.toString('utf8'),
                messageId: parsed.messageId,
                secure: session.secure,
              };
              messages.push(mail);
              for (const waiter of waiters) {
                if (waiter.predicate(mail)) {
                  waiters.delete(waiter);
                  waiter.resolve(mail);
                }
              }
              callback();
            } catch (err) {
              callback(err as Error);
            }
          })(),
      );
    },
  });
  server.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  // After startup, connection-level errors (clients dropping) are not test failures.
  server.on('error', () => {});
  const actualPort = (server.server.address() as { port: number }).port;

  return {
    port: actualPort,
    url: `smtp://127.0.0.1:${actualPort}`,
    messages,
    waitFor(predicate, timeoutMs = 5000) {
      const found = messages.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise<ReceivedMail>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          const received = messages.map((m) => `  to ${m.to.join(', ')}: ${JSON.stringify(m.subject)}`).join('\n');
          reject(new Error(`No matching mail within ${timeoutMs}ms; received ${messages.length}:${received ? `\n${received}` : ' none'}`));
        }, timeoutMs);
        const waiter: Waiter = {
          predicate,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        };
        waiters.add(waiter);
      });
    },
    to(address) {
      const wanted = address.toLowerCase();
      return messages.filter((m) => m.to.some((r) => r.toLowerCase() === wanted));
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

/** Kept for callers that import it from here; it lives in ./net. */
export { freePort } from './net.js';

/** The token of the first link in the message's text whose path is `/${path}` (e.g. 'reset-password', 'verify-email'), read from its `?token=` query parameter; throws if there is none. */
export function linkToken(mail: ReceivedMail, path: string): string {
  for (const [candidate] of mail.text.matchAll(/https?:\/\/[^\s<>"'()[\]]+/g)) {
    let url: URL;
    try {
      url = new URL(candidate.replace(/[.,;:!?]+$/, ''));
    } catch {
      continue;
    }
    const token = url.searchParams.get('token');
    if (url.pathname === `/${path}` && token) return token;
  }
  throw new Error(`No /${path}?token= link in mail to ${mail.to.join(', ')} (${JSON.stringify(mail.subject)}):\n${mail.text}`);
}
