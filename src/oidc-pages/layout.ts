import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { escape, page as basePage, STYLE, type Notice } from '../account-pages/html.js';

export { escape, type Notice } from '../account-pages/html.js';

/** The account pages' look, and what the hosted sign-in pages add: links, a second button, lists, small screens. */
const PAGE_STYLE = `${STYLE}
a { color: #1b6ac9; }
a:focus, button:focus, input:focus { outline: 3px solid #1b6ac9; outline-offset: 2px; }
button.secondary { color: #3b4151; background: #fff; border: 1px solid #d9d9d9; }
.actions { display: flex; flex-wrap: wrap; gap: 12px; }
.actions button { margin-top: 16px; }
.divider { margin: 24px 0 0; padding-top: 16px; border-top: 1px solid #d9d9d9; }
ul.scopes { padding-left: 20px; }
@media (max-width: 30rem) { main { margin: 0; border: 0; border-radius: 0; } header { padding: 12px 16px; } button { width: 100%; } }`;

/**
 * The one script of the pages, for passkeys: each form marked `data-passkey-options` gets its button
 * shown (hidden without JavaScript or WebAuthn), asks the service for the ceremony's options, lets
 * the browser answer them, and posts the form with the answer. Allowed by its hash, nothing else runs.
 */
const PASSKEY_SCRIPT = `(function () {
  if (!window.PublicKeyCredential || !PublicKeyCredential.parseRequestOptionsFromJSON) return;
  document.querySelectorAll('form[data-passkey-options]').forEach(function (form) {
    var button = form.querySelector('button');
    var problem = form.querySelector('[data-passkey-problem]');
    form.hidden = false;
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      button.disabled = true;
      problem.textContent = '';
      var body = new URLSearchParams({ csrf: form.elements.options_csrf.value });
      fetch(form.dataset.passkeyOptions, { method: 'POST', body: body })
        .then(function (res) {
          if (!res.ok) throw new Error('options');
          return res.json();
        })
        .then(function (answer) {
          if (form.elements.challenge_id) form.elements.challenge_id.value = answer.challenge_id || '';
          return navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(answer.options) });
        })
        .then(function (credential) {
          form.elements.credential.value = JSON.stringify(credential.toJSON());
          form.submit();
        })
        .catch(function () {
          button.disabled = false;
          problem.textContent = 'The passkey could not be used. Try again, or use another way to sign in.';
        });
    });
  });
})();`;

const sourceHash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
const STYLE_SOURCE = sourceHash(`\n${PAGE_STYLE}\n`);
const SCRIPT_SOURCE = sourceHash(`\n${PASSKEY_SCRIPT}\n`);

/**
 * The pages' own Content-Security-Policy, stricter than the service-wide one: nothing by default,
 * the style and the passkey script allowed by their hashes, fetch to this origin only. Forms post
 * here, and a browser checks `form-action` on the redirects a post answers too, so the origins the
 * flow ends at (the application's redirect URI) are listed.
 */
export function contentSecurityPolicy(formTargets: readonly string[] = []): string {
  const targets = [...new Set(formTargets.map(originOf).filter((origin): origin is string => origin !== undefined))];
  return [
    "default-src 'none'",
    "base-uri 'none'",
    "object-src 'none'",
    "frame-ancestors 'none'",
    "img-src 'self'",
    "connect-src 'self'",
    `style-src ${STYLE_SOURCE}`,
    `script-src ${SCRIPT_SOURCE}`,
    `form-action ${["'self'", ...targets].join(' ')}`,
  ].join('; ');
}

function originOf(address: string): string | undefined {
  try {
    const url = new URL(address);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

export interface Shown {
  status: number;
  title: string;
  /** Markup, escaped already. */
  body: string;
  notice?: Notice;
  /** Origins the page's forms end at besides this one (see contentSecurityPolicy). */
  formTargets?: readonly string[];
}

/** Answers with a whole page, never cached, under the pages' policy. */
export function show(ctx: Context, service: string, shown: Shown): void {
  ctx.status = shown.status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', contentSecurityPolicy(shown.formTargets));
  ctx.body = page(service, shown.title, shown.body, shown.notice);
}

/** A whole page in the pages' look, with the passkey script when the body has a passkey form. */
export function page(service: string, title: string, body: string, notice?: Notice): string {
  return basePage(service, title, body, notice, {
    style: PAGE_STYLE,
    script: body.includes('data-passkey-options') ? PASSKEY_SCRIPT : undefined,
  });
}

/** Hidden inputs, values escaped here. */
export const hidden = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`)
    .join('\n');

/** A labelled input; `attributes` is markup. */
export function field(id: string, label: string, attributes: string, hint?: string, name = id): string {
  const described = hint ? ` aria-describedby="${id}-hint"` : '';
  return `<label for="${id}">${escape(label)}</label>
<input id="${id}" name="${name}" ${attributes}${described}>
${hint ? `<p class="hint" id="${id}-hint">${escape(hint)}</p>\n` : ''}`;
}

export const paragraph = (text: string) => `<p>${escape(text)}</p>\n`;
