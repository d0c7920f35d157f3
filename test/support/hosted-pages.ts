// A browser without JavaScript, for the hosted sign-in pages: a cookie jar that keeps each cookie's
// path, redirects followed by hand (so that a test sees where they lead), and the pages' forms read
// from their markup and posted with the values a person would type.

export interface Page {
  status: number;
  url: string;
  headers: Headers;
  html: string;
}

export interface Form {
  action: string;
  /** The form's fields with their values as shown (hidden ones included). */
  fields: Record<string, string>;
}

interface Cookie {
  value: string;
  path: string;
}

const decode = (text: string) =>
  text
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"');

/** The forms of a page, each with its action (absolute) and the values its inputs hold. */
export function formsOf(page: Page): Form[] {
  const forms: Form[] = [];
  for (const match of page.html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)) {
    const action = /\baction="([^"]*)"/.exec(match[1])?.[1] ?? '';
    const fields: Record<string, string> = {};
    for (const input of match[2].matchAll(/<input\b([^>]*)>/g)) {
      const name = /\bname="([^"]*)"/.exec(input[1])?.[1];
      if (name === undefined) continue;
      fields[decode(name)] = decode(/\bvalue="([^"]*)"/.exec(input[1])?.[1] ?? '');
    }
    forms.push({ action: new URL(decode(action), page.url).href, fields });
  }
  return forms;
}

/** The one form of the page posted to a path ending in `suffix`. */
export function formTo(page: Page, suffix: string): Form {
  const found = formsOf(page).filter((form) => new URL(form.action).pathname.endsWith(suffix));
  if (found.length !== 1) throw new Error(`expected one form posting to …${suffix} on ${page.url}, found ${found.length}:\n${page.html}`);
  return found[0];
}

export class FormBrowser {
  private readonly jar = new Map<string, Cookie>();

  /** `origin` is the service's: only its cookies are kept and only its addresses are followed. */
  constructor(private readonly origin: string) {}

  /** Whether the jar holds a cookie of that name (on any path). */
  has(name: string): boolean {
    return [...this.jar.keys()].some((key) => key.startsWith(`${name};`));
  }

  async request(
    url: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Page> {
    const target = new URL(url, this.origin);
    const headers: Record<string, string> = { 'user-agent': 'hosted-pages-test', ...init.headers };
    const cookie = this.cookieHeader(target);
    if (cookie) headers.cookie = cookie;
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      headers.origin ??= this.origin;
      body = new URLSearchParams(init.form).toString();
    }
    const response = await fetch(target, { method: init.method ?? (init.form ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    if (target.origin === this.origin) this.keep(response.headers.getSetCookie());
    return { status: response.status, url: target.href, headers: response.headers, html: await response.text() };
  }

  /**
   * Follows redirects from `page` while they stay at the service; returns the last page there, or the
   * redirect that leaves it (its `url` the address outside, its status 0).
   */
  async follow(page: Page): Promise<Page> {
    let current = page;
    for (let hops = 0; hops < 10; hops++) {
      if (current.status < 300 || current.status >= 400) return current;
      const next = new URL(current.headers.get('location')!, current.url);
      if (next.origin !== this.origin) return { status: 0, url: next.href, headers: new Headers(), html: '' };
      current = await this.request(next.href);
    }
    throw new Error(`too many redirects from ${page.url}`);
  }

  /** Opens an address and follows its redirects. */
  async open(url: string): Promise<Page> {
    return this.follow(await this.request(url));
  }

  /** Posts a form with these values over the ones it holds, and follows the answer's redirects. */
  async submit(form: Form, values: Record<string, string> = {}, headers?: Record<string, string>): Promise<Page> {
    return this.follow(await this.request(form.action, { form: { ...form.fields, ...values }, headers }));
  }

  private cookieHeader(url: URL): string {
    if (url.origin !== this.origin) return '';
    return [...this.jar.entries()]
      .filter(
        ([, cookie]) =>
          url.pathname === cookie.path || url.pathname.startsWith(cookie.path.endsWith('/') ? cookie.path : `${cookie.path}/`),
      )
      .sort(([, a], [, b]) => b.path.length - a.path.length)
      .map(([key, cookie]) => `${key.split(';')[0]}=${cookie.value}`)
      .join('; ');
  }

  private keep(setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim());
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      const attribute = (wanted: string) => attributes.find((a) => a.toLowerCase().startsWith(`${wanted}=`))?.slice(wanted.length + 1);
      const path = attribute('path') ?? '/';
      const expires = attribute('expires');
      const gone = value === '' || attribute('max-age') === '0' || (expires !== undefined && Date.parse(expires) <= Date.now());
      const key = `${name};${path}`;
      if (gone) this.jar.delete(key);
      else this.jar.set(key, { value, path });
    }
  }
}

/**
 * Opens an authorization request in `browser` and signs in on its sign-in page with an e-mail address and a
 * password; the page the sign-in leads to (the consent page, or the redirect that leaves the service).
 */
export async function signIn(browser: FormBrowser, authorizeUrl: string, email: string, password: string): Promise<Page> {
  const page = await browser.open(authorizeUrl);
  return browser.submit(formTo(page, '/login'), { email, password });
}

/**
 * Opens a device's `verification_uri_complete` in `browser` (the user code filled in), continues on the
 * page that shows the code, signs in with an e-mail address and a password, and allows the application
 * when a consent page comes; the page the sign-in ends on (the device is signed in).
 */
export async function signInDevice(browser: FormBrowser, verificationUri: string, email: string, password: string): Promise<Page> {
  const page = await browser.open(verificationUri);
  const confirm = await browser.submit(formTo(page, '/oauth2/device'));
  const signInPage = await browser.submit(formTo(confirm, '/oauth2/device'), { confirm: 'yes' });
  const next = await browser.submit(formTo(signInPage, '/login'), { email, password });
  const consent = formsOf(next).some((form) => new URL(form.action).pathname.endsWith('/consent'));
  return consent ? browser.submit(formTo(next, '/consent'), { decision: 'allow' }) : next;
}
