import { lookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Why a URL the service would fetch (a webhook's, a provider's) or the address its name resolves to
 * is not used; the message is shown to admins. `internal` when the address is one the
 * `*_ALLOW_PRIVATE_URLS` settings would allow.
 */
export class RefusedAddress extends Error {
  constructor(
    message: string,
    readonly internal = false,
  ) {
    super(message);
  }
}

/**
 * Whether an address is on the public internet: not loopback, private, link-local, CGNAT,
 * unique-local, unspecified, multicast, broadcast, documentation or otherwise reserved. IPv4-mapped
 * IPv6 forms (`::ffff:127.0.0.1`) are judged as the IPv4 address they carry; other IPv6 forms that
 * embed an IPv4 address (NAT64, 6to4, Teredo) are refused outright.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

/** A URL's host as an IP address when it is one (`[::1]` without its brackets), else undefined. */
function literalAddress(url: URL): string | undefined {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return ipaddr.isValid(host) ? host : undefined;
}

/**
 * What is wrong with an endpoint URL on its face, or undefined: only https (and http when private
 * addresses are allowed), no credentials in it, and no non-public IP address as its host.
 */
export function urlProblem(value: string, allowPrivate: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return allowPrivate ? 'must be an http:// or https:// URL' : 'must be an https:// URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  const literal = literalAddress(url);
  if (!allowPrivate && literal !== undefined && !isPublicAddress(literal)) {
    return `points to ${literal}, which is not a public address (loopback, private, link-local and other internal addresses are refused)`;
  }
  return undefined;
}

/** Every address of `hostname`, or a RefusedAddress when it has none, or any that is not public. */
function resolvePublic(hostname: string, callback: (error: Error | null, addresses: LookupAddress[]) => void): void {
  lookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
    if (error || addresses.length === 0) {
      callback(new RefusedAddress(`${hostname} does not resolve to an address`), []);
      return;
    }
    const internal = addresses.find((a) => !isPublicAddress(a.address));
    if (internal) {
      callback(new RefusedAddress(`${hostname} resolves to ${internal.address}, which is not a public address`, true), []);
      return;
    }
    callback(null, addresses);
  });
}

/**
 * Checks at registration that the URL's name resolves, within `timeoutMs`, to public addresses only.
 * Delivery checks again, on the very address it connects to (`publicOnlyLookup`).
 */
export function checkResolvesPublic(value: string, timeoutMs: number): Promise<void> {
  const url = new URL(value);
  if (literalAddress(url) !== undefined) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new RefusedAddress(`${url.hostname} could not be resolved in time`)), timeoutMs);
    resolvePublic(url.hostname, (error) => {
      clearTimeout(timer);
      if (error) reject(error);
      else resolve();
    });
  });
}

/**
 * A `lookup` for node:http(s) requests that resolves the name and hands the socket only public
 * addresses: the check and the connection use the same answer, so a name that changes its
 * address between the two (DNS rebinding) cannot reach an internal one.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  resolvePublic(hostname, (error, addresses) => {
    if (error) {
      callback(error, '', 0);
      return;
    }
    const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
    if (wanted.length === 0) {
      callback(new RefusedAddress(`${hostname} has no IPv${String(options.family)} address`), '', 0);
      return;
    }
    if (options.all) callback(null, wanted);
    else callback(null, wanted[0].address, wanted[0].family);
  });
};

/** The most of an answer `publicOnlyFetch` reads: metadata, keys and profiles are small. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** The parts of a fetch request that OAuth libraries send. */
interface FetchInit {
  method?: string;
  headers?: ConstructorParameters<typeof Headers>[0];
  body?: ConstructorParameters<typeof Response>[0];
  signal?: AbortSignal | null;
}

/**
 * A `fetch` that connects only to public addresses: a literal address in the URL is judged as it
 * stands, and a name through `publicOnlyLookup`, on the very address the socket connects to (so
 * DNS rebinding cannot reach an internal one). Redirects are not followed; an answer over
 * MAX_ANSWER_BYTES fails.
 */
export async function publicOnlyFetch(input: string | URL, init: FetchInit = {}): Promise<Response> {
  const url = new URL(input);
  const literal = literalAddress(url);
  if (literal !== undefined && !isPublicAddress(literal)) throw new RefusedAddress(`${literal} is not a public address`, true);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new RefusedAddress(`${url.protocol} is not fetched`);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers = Object.fromEntries(new Headers(init.headers ?? {}));
  // Whatever form the body takes (text, form, bytes, stream), as the bytes to send.
  const body = init.body === undefined || init.body === null ? undefined : Buffer.from(await new Response(init.body).arrayBuffer());
  return new Promise<Response>((resolve, reject) => {
    const sent = send(
      url,
      { method: init.method ?? 'GET', headers, lookup: publicOnlyLookup, signal: init.signal ?? undefined },
      (answer) => {
        readAnswer(answer).then(resolve, reject);
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

async function readAnswer(answer: IncomingMessage): Promise<Response> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer) {
    size += (chunk as Buffer).length;
    if (size > MAX_ANSWER_BYTES) {
      answer.destroy();
      throw new RefusedAddress(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
  }
  const status = answer.statusCode ?? 502;
  const empty = status === 204 || status === 304;
  return new Response(empty ? null : Buffer.concat(chunks), { status, statusText: answer.statusMessage, headers });
}
