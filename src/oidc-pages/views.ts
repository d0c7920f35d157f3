import type { InteractionView } from '../oidc/interactions.js';
import { escape, field, hidden, paragraph } from './layout.js';

/** The CSRF value of a form posted to this path under the interaction. */
type Csrf = (path: string) => string;

interface Parts {
  view: InteractionView;
  base: string;
  csrf: Csrf;
}

/** What each scope lets the application do, in plain words. */
const SCOPE_WORDS: Record<string, (service: string) => string> = {
  openid: (service) => `Know that you are the same person each time you sign in with ${service}`,
  profile: () => 'See your name',
  email: () => 'See your e-mail address, and whether it is confirmed',
  offline_access: () => 'Stay connected when you are not using it, until you sign out of it or remove its access',
};

/**
 * The application in words: an admin's client by the name the admin gave it; a client that registered
 * itself by the name it chose, quoted as its own claim and never as the service's wording.
 */
export const applicationText = (view: InteractionView): string =>
  view.client.registered ? `The application that calls itself “${view.client.name}”` : view.client.name;

/** applicationText as markup, the name in bold. */
const applicationMarkup = (view: InteractionView): string =>
  view.client.registered
    ? `The application that calls itself “<strong>${escape(view.client.name)}</strong>”`
    : `<strong>${escape(view.client.name)}</strong>`;

/** Where the browser goes once the person has answered: the host of the redirect URI (or the scheme of a native app's). */
export function redirectHost(view: InteractionView): string | undefined {
  const url = view.redirectUri === undefined ? null : URL.parse(view.redirectUri);
  if (!url) return undefined;
  return url.host !== '' ? url.host : url.protocol;
}

/** A form that posts to `base + path` with its CSRF value; `inner` is markup. */
const formTo = (base: string, csrf: Csrf, path: string, inner: string, attributes = '') =>
  `<form method="post" action="${escape(base + path)}"${attributes}>
${hidden({ csrf: csrf(path) })}
${inner}</form>
`;

/** The way back to the application, refusing the sign-in. */
const cancel = ({ view, base, csrf }: Parts) =>
  formTo(
    base,
    csrf,
    '/abort',
    `<button type="submit" class="secondary">Cancel and go back to ${view.client.registered ? 'the application' : escape(view.client.name)}</button>\n`,
    ' class="divider"',
  );

/**
 * The passkey's form: hidden until the script finds WebAuthn in the browser; the script fetches the
 * options from `optionsPath`, and posts the browser's answer in `credential`.
 */
function passkeyForm(base: string, csrf: Csrf, path: string, optionsPath: string, label: string, extra: Record<string, string>): string {
  return `<form method="post" action="${escape(base + path)}" data-passkey-options="${escape(base + optionsPath)}" class="divider" hidden>
${hidden({ csrf: csrf(path), options_csrf: csrf(optionsPath), credential: '', ...extra })}
<button type="submit" class="secondary">${escape(label)}</button>
<p class="hint" role="alert" data-passkey-problem></p>
</form>
`;
}

/** What the sign-in is for, above its forms. */
const intro = (view: InteractionView) =>
  view.client.registered
    ? `<p>Sign in to continue. ${applicationMarkup(view)} asks for it.</p>\n`
    : `<p>Sign in to continue to <strong>${escape(view.client.name)}</strong>.</p>\n`;

/** The sign-in providers that are on, as links that start their sign-in. */
const otherProviders = (base: string, providers: Array<{ slug: string; name: string }>) =>
  providers.length === 0
    ? ''
    : `<nav class="divider" aria-label="Other ways to sign in">
<p>Or sign in with:</p>
<ul>
${providers.map((p) => `<li><a href="${escape(`${base}/provider/${encodeURIComponent(p.slug)}`)}">${escape(p.name)}</a></li>`).join('\n')}
</ul>
</nav>
`;

export function signIn(parts: Parts & { providers: Array<{ slug: string; name: string }>; emailCodes: boolean; email?: string }): string {
  const { view, base, csrf, providers, emailCodes, email } = parts;
  const password = formTo(
    base,
    csrf,
    '/login',
    field(
      'email',
      'E-mail address',
      `type="email" autocomplete="username webauthn" required maxlength="254" value="${escape(email ?? '')}"`,
    ) +
      field('password', 'Password', 'type="password" autocomplete="current-password" required') +
      '<button type="submit">Sign in</button>\n',
  );
  return (
    intro(view) +
    password +
    `<p><a href="${escape(`${base}/forgot-password`)}">Forgot your password?</a></p>\n` +
    (emailCodes ? `<p><a href="${escape(`${base}/email-code`)}">Sign in with a code sent by e-mail</a></p>\n` : '') +
    passkeyForm(base, csrf, '/passkey', '/passkey/options', 'Sign in with a passkey', { challenge_id: '' }) +
    otherProviders(base, providers) +
    cancel(parts)
  );
}

/**
 * The first step of signing in when some organisation signs its people in with its own identity
 * provider: the address alone (the next step depends on its domain), or a passkey, or a provider.
 */
export function identify(parts: Parts & { providers: Array<{ slug: string; name: string }>; email?: string }): string {
  const { view, base, csrf, providers, email } = parts;
  return (
    intro(view) +
    formTo(
      base,
      csrf,
      '/identify',
      field(
        'email',
        'E-mail address',
        `type="email" autocomplete="username webauthn" required maxlength="254" value="${escape(email ?? '')}"`,
        'If your organisation signs you in with its own provider, you are sent there next.',
      ) + '<button type="submit">Continue</button>\n',
    ) +
    passkeyForm(base, csrf, '/passkey', '/passkey/options', 'Sign in with a passkey', { challenge_id: '' }) +
    otherProviders(base, providers) +
    cancel(parts)
  );
}

/** An address whose organisation requires its own identity provider: that provider is the only way offered. */
export function organizationProvider(parts: Parts & { provider: { slug: string; name: string } }): string {
  const { base, provider } = parts;
  return (
    paragraph(`Your organisation signs you in with ${provider.name}. Other ways to sign in are turned off for your address.`) +
    `<p><a href="${escape(`${base}/provider/${encodeURIComponent(provider.slug)}`)}">Sign in with ${escape(provider.name)}</a></p>\n` +
    back(base) +
    cancel(parts)
  );
}

const METHOD_NAMES: Record<string, string> = { totp: 'authenticator app', recovery_code: 'recovery code', webauthn: 'passkey' };

export function secondFactor(parts: Parts & { methods: readonly string[] }): string {
  const { base, csrf, methods } = parts;
  const known = methods.filter((m) => Object.hasOwn(METHOD_NAMES, m));
  const listed = known.join(',');
  const codeForm = (method: string, label: string, attributes: string, hint: string, button: string) =>
    formTo(
      base,
      csrf,
      '/second-step',
      hidden({ method, methods: listed }) +
        '\n' +
        field(`${method}_code`, label, attributes, hint, 'code') +
        `<button type="submit">${button}</button>\n`,
    );
  let body = paragraph('Your account has a second step. Prove it is you with one of these.');
  if (known.includes('totp'))
    body += codeForm(
      'totp',
      'Code from your authenticator app',
      'type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="8" required',
      'The six digits the app shows for this account now.',
      'Continue',
    );
  if (known.includes('webauthn'))
    body += passkeyForm(base, csrf, '/second-step', '/second-step/passkey-options', 'Use your passkey', {
      method: 'webauthn',
      methods: listed,
    });
  if (known.includes('recovery_code'))
    body += `<div class="divider">\n${codeForm(
      'recovery_code',
      'Recovery code',
      'type="text" autocomplete="off" autocapitalize="off" spellcheck="false" maxlength="64" required',
      'One of the codes you saved when you set up the second step; each works once.',
      'Use the recovery code',
    )}</div>\n`;
  return body + cancel(parts);
}

export function consent(parts: Parts & { service: string }): string {
  const { view, base, csrf, service } = parts;
  const words = view.scopes.map((scope) => escape(Object.hasOwn(SCOPE_WORDS, scope) ? SCOPE_WORDS[scope](service) : `Use "${scope}"`));
  return (
    `<p>${applicationMarkup(view)} asks to:</p>
<ul class="scopes">
${words.map((w) => `<li>${w}</li>`).join('\n')}
</ul>
` +
    (view.client.registered && redirectHost(view) !== undefined
      ? `<p>If you allow it, you are sent on to <strong>${escape(redirectHost(view)!)}</strong>.</p>\n`
      : '') +
    paragraph(`You can remove its access at any time from your ${service} account.`) +
    formTo(
      base,
      csrf,
      '/consent',
      `<div class="actions">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
`,
    )
  );
}

export function forgotPassword({ base, csrf }: { base: string; csrf: Csrf }): string {
  return (
    paragraph('Enter the e-mail address of your account, and we will send it a link to choose a new password.') +
    formTo(
      base,
      csrf,
      '/forgot-password',
      field('email', 'E-mail address', 'type="email" autocomplete="username" required maxlength="254"') +
        '<button type="submit">Send the link</button>\n',
    ) +
    back(base)
  );
}

export function askEmailCode({ base, csrf }: { base: string; csrf: Csrf }): string {
  return (
    paragraph('Enter the e-mail address of your account, and we will send it a code to sign in with, no password needed.') +
    formTo(
      base,
      csrf,
      '/email-code',
      field('email', 'E-mail address', 'type="email" autocomplete="username" required maxlength="254"') +
        '<button type="submit">Send the code</button>\n',
    ) +
    back(base)
  );
}

export function emailCode({ base, csrf, email }: { base: string; csrf: Csrf; email: string }): string {
  return (
    formTo(
      base,
      csrf,
      '/email-code/verify',
      hidden({ email }) +
        '\n' +
        field(
          'code',
          'Code from the e-mail',
          'type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="8" required',
          `The six digits of the e-mail sent to ${email}.`,
        ) +
        '<button type="submit">Sign in</button>\n',
    ) + back(base)
  );
}

/** The code mailed to the address a sign-in provider gave without vouching for it. */
export function providerAddressCode({ base, csrf }: { base: string; csrf: Csrf }): string {
  return (
    paragraph(
      'The provider you signed in with has not confirmed your e-mail address. We sent a six-digit code to it: enter it to show the address is yours.',
    ) +
    formTo(
      base,
      csrf,
      '/provider-verify',
      field(
        'code',
        'Code from the e-mail',
        'type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="8" required',
        'The six digits of the e-mail we just sent.',
      ) + '<button type="submit">Continue</button>\n',
    ) +
    back(base)
  );
}

/** A link back to the sign-in page of this interaction. */
export const back = (base: string) => `<p><a href="${escape(base)}">Back to signing in</a></p>\n`;

export const gone = () => paragraph('Go back to the application you came from and sign in again from there.');
