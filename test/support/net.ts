import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that nothing listens on right now, for a server process to take. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
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
