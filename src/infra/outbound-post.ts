import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { publicOnlyLookup, RefusedAddress } from './public-addresses.js';

/** How a POST to a receiver went: the answer's status (null when none came), and what was wrong (null after a 2xx). */
export interface PostAnswer {
  statusCode: number | null;
  error: string | null;
}

export interface PostOptions {
  /** The whole exchange's limit. */
  timeoutMs: number;
  /** When false, the socket connects only to an address `publicOnlyLookup` has checked. */
  allowPrivateUrls: boolean;
}

/**
 * One delivery attempt to a receiver the service calls (a webhook endpoint, a client's back-channel
 * logout URI): a 2xx is success, a redirect is not followed, anything else is said in `error`.
 */
export async function postOnce(url: string, headers: Record<string, string>, body: string, options: PostOptions): Promise<PostAnswer> {
  try {
    const statusCode = await post(new URL(url), headers, body, options);
    if (statusCode >= 200 && statusCode < 300) return { statusCode, error: null };
    if (statusCode >= 300 && statusCode < 400) return { statusCode, error: `redirect (HTTP ${statusCode}) not followed` };
    return { statusCode, error: `HTTP ${statusCode}` };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { statusCode: null, error: (error instanceof RefusedAddress ? `refused: ${message}` : message).slice(0, 500) };
  }
}

/**
 * POSTs the body and resolves with the answer's status. No redirect is followed, no connection is
 * reused, the whole exchange gets `timeoutMs`, and unless private addresses are allowed the socket
 * connects only to an address `publicOnlyLookup` has checked.
 */
function post(url: URL, headers: Record<string, string>, body: string, options: PostOptions): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      agent: false,
      lookup: options.allowPrivateUrls ? undefined : publicOnlyLookup,
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    req.on('response', (res: IncomingMessage) => {
      // The status is the answer; the body is drained, within the same time limit.
      resolve(res.statusCode ?? 0);
      res.on('end', () => clearTimeout(timer));
      res.on('error', () => clearTimeout(timer));
      res.resume();
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}
