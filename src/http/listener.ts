import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerConfig } from '../config/index.js';
import type { Logger } from '../logger.js';
import type { ErrorCode } from './errors.js';

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

/** The listening socket could not be opened (the port is taken, or may not be bound by this user). */
export class ListenError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'ListenError';
  }
}

/** Starts `server` listening; a port already in use or not allowed fails with a ListenError saying which setting to change. */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      const where = `port ${port} on ${host}`;
      if (error.code === 'EADDRINUSE')
        reject(new ListenError(`${where} is already in use; set PORT=... to another port`, { cause: error }));
      else if (error.code === 'EACCES')
        reject(new ListenError(`${where} may not be used by this user; set PORT=... to a port above 1023`, { cause: error }));
      else if (error.code === 'EADDRNOTAVAIL')
        reject(
          new ListenError(`${host} is not an address of this machine; set HOST=... (127.0.0.1, or 0.0.0.0 for every address)`, {
            cause: error,
          }),
        );
      else reject(error);
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
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
