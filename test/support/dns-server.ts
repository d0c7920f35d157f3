import { createSocket } from 'node:dgram';

/** A DNS server on a loopback UDP port that answers TXT queries from `records`, and nothing else. */
export interface DnsServer {
  /** `127.0.0.1:PORT`, for DNS_SERVERS. */
  address: string;
  /** The TXT records by name (lower-case, no trailing dot); a name left out has none. */
  records: Map<string, string[]>;
  close(): Promise<void>;
}

const TXT = 16;

export async function startDnsServer(): Promise<DnsServer> {
  const records = new Map<string, string[]>();
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    // The question: labels from byte 12 to a zero length, then its type and class.
    const labels: string[] = [];
    let at = 12;
    while (query[at] !== 0) {
      labels.push(query.subarray(at + 1, at + 1 + query[at]).toString('ascii'));
      at += query[at] + 1;
    }
    const questionEnd = at + 5;
    const type = query.readUInt16BE(at + 1);
    const texts = type === TXT ? (records.get(labels.join('.').toLowerCase()) ?? []) : [];
    const answers = texts.map((text) => {
      const data = Buffer.concat([Buffer.from([Buffer.byteLength(text)]), Buffer.from(text)]);
      const head = Buffer.alloc(12);
      head.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      head.writeUInt16BE(TXT, 2);
      head.writeUInt16BE(1, 4); // IN
      head.writeUInt32BE(0, 6); // TTL
      head.writeUInt16BE(data.length, 10);
      return Buffer.concat([head, data]);
    });
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8180, 2); // a response, recursion available, no error
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), ...answers]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    records,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
