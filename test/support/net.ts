import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now, for a server process to take. It is
 * drawn below the kernel's ephemeral range (32768 and up), so that no outgoing connection, and no
 * listener on port 0 elsewhere in the suite, can take it between this check and the server's listen.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * Whether the server listening on `serverPort` has read everything the client on `clientPort` sent
 * (Linux: the server end of that connection exists and its receive queue is empty). Once it has, a
 * request on that connection is being worked on, not waiting in a queue.
 */
export async function serverHasRead(serverPort: number, clientPort: number): Promise<boolean> {
  const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');
  const table = await readFile('/proc/net/tcp', 'utf8');
  for (const row of table.split('\n').slice(1)) {
    const [, local, remote, , queues] = row.trim().split(/\s+/);
    if (local?.endsWith(`:${hex(serverPort)}`) && remote?.endsWith(`:${hex(clientPort)}`)) return queues.split(':')[1] === '00000000';
  }
  return false;
}
