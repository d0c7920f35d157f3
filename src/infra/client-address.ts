import { isIPv4, isIPv6 } from 'node:net';

/**
 * The client as limits count it: an IPv4 address as it is, an IPv6 address by its /64 (the
 * smallest block one subscriber is handed, so every address in it is one client), an
 * IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) as the IPv4 address it maps.
 */
export function clientKey(ip: string | null | undefined): string {
  const address = (ip ?? '').trim().toLowerCase();
  if (address === '') return 'unknown';
  if (isIPv4(address)) return address;
  const bare = address.split('%')[0];
  if (!isIPv6(bare)) return address.slice(0, 64);
  const groups = ipv6Groups(bare);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, `::` expanded and a dotted IPv4 tail converted. */
function ipv6Groups(address: string): number[] {
  let text = address;
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number);
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::');
  const before = head ? head.split(':') : [];
  const after = rest ? rest.split(':') : [];
  const zeros = rest === undefined ? [] : Array<string>(8 - before.length - after.length).fill('0');
  return [...before, ...zeros, ...after].map((group) => parseInt(group, 16));
}
