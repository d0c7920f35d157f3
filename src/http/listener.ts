import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerConfig } from '../config';
import type { Logger } from '../logger';
import type { ErrorCode } from './errors';

/** How often, at most, a refused connection over MAX_CONNECTIONS is logged. */
const DROP_LOG_INTERVAL_MS = 60_000;

/**
 * The HTTP server the app listens with: headers and whole requests must arrive in time (slow clients
 * do not hold sockets for minutes), connections are capped per process, and the errors Node answers
 * itself, before the app sees a request, are JSON envelopes like every other error.
 */
export function createHttpServer(
  config: Pick<ServerConfig, 'headersTimeoutMs' | 'requestTimeoutMs' | 'maxConnections'>,
  /** Koa's `app.callback()`: its promise never rejects (Koa answers errors itself). */
  listener: (...args: Parameters<RequestListener>) => unknown,
  logger: Logger,
): Server {
  const server = createServer(
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      // Node looks for expired requests on this interval (30 s by default), which would let a 20-second
      // limit run to 50; checking every second keeps the limits near what they say.
      connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(config.headersTimeoutMs / 4))),
    },
    listener,
  );
  server.maxConnections = config.maxConnections;
  server.on('clientError', answerClientError);

  let dropped = 0;
  let lastLoggedAt = 0;
  server.on('drop', () => {
    dropped++;
    const now = Date.now();
    if (now - lastLoggedAt < DROP_LOG_INTERVAL_MS) return;
    logger.warn({ dropped, maxConnections: config.maxConnections }, 'connections refused: MAX_CONNECTIONS reached');
    lastLoggedAt = now;
    dropped = 0;
  });
  return server;
}

/** Node's own answers (431, 408, 400) in the service's envelope; the connection closes after it. */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  // A client that went away, or a response already under way: there is nobody or no room to answer.
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message] = describe(error.code);
  const body = JSON.stringify({ success: false, error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\n' +
      'X-Content-Type-Options: nosniff\r\n' +
      'Connection: close\r\n' +
      '\r\n' +
      body,
    () => socket.destroy(),
  );
}

function describe(code: string | undefined): [number, ErrorCode, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'HEADERS_TOO_LARGE', 'Request headers too large'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'REQUEST_TIMEOUT', 'Request not received in time'];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'PAYLOAD_TOO_LARGE', 'Request body too large'];
    default:
      return [400, 'BAD_REQUEST', 'Malformed request'];
  }
}
