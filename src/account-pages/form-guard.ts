import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';

/** The cookie that ties a form to the browser it was shown in (a double-submit cookie, signed). */
const COOKIE = 'account_form';
/** A form body is a token, a CSRF value and two passwords: far below this. */
const MAX_FORM_BYTES = 8 * 1024;

/**
 * Cross-site request forgery protection for the account pages' forms, without JavaScript:
 * - the page sets a random cookie (HttpOnly, SameSite=Strict) and puts an HMAC of it, bound to the
 *   form's path, in a hidden field; a post must carry both, and they must match. Another site can
 *   neither read the cookie nor make the browser send it (SameSite=Strict);
 * - a post whose Origin (or, without one, Sec-Fetch-Site) says it came from another site is refused
 *   outright.
 */
export class FormGuard {
  /** The cookie each response sets, so that every form of one page is signed for the same one. */
  private readonly issued = new WeakMap<Context, string>();

  constructor(private readonly secret: string) {}

  /** The hidden field's value for a form posted to `path`, setting the browser's cookie if it has none. */
  issue(ctx: Context, path: string): string {
    let cookie = this.issued.get(ctx) ?? ctx.cookies.get(COOKIE);
    if (!cookie || !/^[A-Za-z0-9_-]{43}$/.test(cookie)) {
      cookie = randomBytes(32).toString('base64url');
      ctx.cookies.set(COOKIE, cookie, { httpOnly: true, sameSite: 'strict', secure: ctx.secure, path: '/', overwrite: true });
    }
    this.issued.set(ctx, cookie);
    return this.sign(cookie, path);
  }

  /** Whether a post to `path` carrying `field` comes from a form this service showed in this browser. */
  accepts(ctx: Context, path: string, field: string | undefined): boolean {
    if (!sameOrigin(ctx)) return false;
    const cookie = ctx.cookies.get(COOKIE);
    if (!cookie || !field) return false;
    const expected = Buffer.from(this.sign(cookie, path));
    const given = Buffer.from(field);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  private sign(cookie: string, path: string): string {
    return createHmac('sha256', this.secret).update(`account-form\n${path}\n${cookie}`).digest('base64url');
  }
}

/** False when the browser says the post came from another origin (or another site). */
function sameOrigin(ctx: Context): boolean {
  const origin = ctx.get('origin');
  // Koa 3's `ctx.origin` is this very header: the service's own origin is built from the request's host.
  // Under the pages' `Referrer-Policy: no-referrer` a browser sends `Origin: null` even from the page
  // itself: then Sec-Fetch-Site decides.
  if (origin && origin !== 'null') return origin === `${ctx.protocol}://${ctx.host}`;
  const site = ctx.get('sec-fetch-site');
  return site === '' || site === 'same-origin' || site === 'none';
}

/**
 * The fields of an application/x-www-form-urlencoded body, or undefined for another content type or a
 * body over MAX_FORM_BYTES. Only the first value of each field counts.
 */
export async function readForm(ctx: Context): Promise<Record<string, string> | undefined> {
  if (!ctx.is('application/x-www-form-urlencoded')) return undefined;
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > MAX_FORM_BYTES) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk);
  }
  const fields: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(Buffer.concat(chunks).toString('utf8'))) {
    if (!Object.hasOwn(fields, name)) fields[name] = value;
  }
  return fields;
}
