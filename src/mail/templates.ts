import type { Mail } from './transport.js';

/**
 * Characters that could forge lines or reorder what a reader sees: every control character (line
 * breaks and tabs included), the Unicode line and paragraph separators, and the bidirectional
 * marks, embeddings, overrides and isolates.
 */
const UNSAFE = /[\p{Cc}\p{Zl}\p{Zp}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/**
 * A value from an account (a name, an address) made safe for the text part: each unsafe character
 * becomes U+FFFD, so a name stays on its line, cannot start a paragraph, and shows that it held
 * something odd rather than hiding it.
 */
export const plainText = (value: string) => value.replace(UNSAFE, '\uFFFD');

/** The same value for the HTML part: neutralised as in the text part, then entity-escaped. */
export const htmlText = (value: string) => plainText(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A paragraph: the service's own words, with account values (names, addresses) in between. */
type Paragraph = Array<string | { value: string }>;

interface Message {
  to: string;
  subject: string;
  name: string;
  paragraphs: Paragraph[];
  /** A one-time code shown on its own line, large in the HTML part, before the action. */
  code?: string;
  action?: { label: string; link: string; lifetime: string };
  footer: Paragraph;
}

const asText = (p: Paragraph) => p.map((part) => (typeof part === 'string' ? part : plainText(part.value))).join('');
const asHtml = (p: Paragraph) => p.map((part) => htmlText(typeof part === 'string' ? part : part.value)).join('');

function compose(m: Message): Mail {
  const greeting: Paragraph = ['Hello ', { value: m.name }, ','];
  const text = [asText(greeting), ...m.paragraphs.map(asText)];
  const html = [`<p>${asHtml(greeting)}</p>`, ...m.paragraphs.map((p) => `<p>${asHtml(p)}</p>`)];
  if (m.code !== undefined) {
    text.push(`    ${m.code}`);
    html.push(
      `<p style="font-family: monospace; font-size: 32px; font-weight: bold; letter-spacing: 6px; margin: 24px 0">${htmlText(m.code)}</p>`,
    );
  }
  if (m.action) {
    const { label, link, lifetime } = m.action;
    // With a code, the two are one: whichever is used first voids the other.
    const validity =
      m.code === undefined
        ? `The link works once and expires in ${lifetime}.`
        : `The code and the link work once, and using one voids the other. Both expire in ${lifetime}.`;
    text.push(m.code === undefined ? link : `Or open this link:\n${link}`, validity);
    html.push(
      `<p><a href="${htmlText(link)}">${htmlText(label)}</a></p>`,
      `<p>Or paste this address into your browser:<br>${htmlText(link)}</p>`,
      `<p>${htmlText(validity)}</p>`,
    );
  }
  text.push(asText(m.footer));
  html.push(`<p>${asHtml(m.footer)}</p>`);
  return {
    to: m.to,
    subject: m.subject,
    text: `${text.join('\n\n')}\n`,
    html: `<!doctype html>
<html><body style="font-family: sans-serif; line-height: 1.5">
${html.join('\n')}
</body></html>
`,
    link: m.action?.link,
    code: m.code,
  };
}

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;

/** The texts of a message whose link confirms an address (`/verify-email`). */
interface AddressConfirmation {
  subject: string;
  paragraph: string;
  label: string;
  footer: string;
}

function addressConfirmationMail(
  texts: AddressConfirmation,
  appUrl: string,
  to: string,
  name: string,
  token: string,
  expireHours: number,
): Mail {
  const link = `${appUrl}/verify-email?token=${token}`;
  const action = { label: texts.label, link, lifetime: plural(expireHours, 'hour') };
  return compose({ to, subject: texts.subject, name, paragraphs: [[texts.paragraph]], action, footer: [texts.footer] });
}

export function verificationMail(appUrl: string, to: string, name: string, token: string, expireHours: number): Mail {
  const texts = {
    subject: 'Confirm your e-mail address',
    paragraph: 'Please confirm that this is your e-mail address by opening the link below.',
    label: 'Confirm my e-mail address',
    footer: 'If you did not create an account or change your address, ignore this message: nothing changes without the link.',
  };
  return addressConfirmationMail(texts, appUrl, to, name, token, expireHours);
}

/** Sent to the address a user asked to move to; following it moves the account there. */
export function emailChangeMail(appUrl: string, to: string, name: string, token: string, expireHours: number): Mail {
  const texts = {
    subject: 'Confirm your new e-mail address',
    paragraph:
      'Someone asked to move an account to this e-mail address. Open the link below to confirm it; until then the account keeps its current address.',
    label: 'Confirm my new e-mail address',
    footer: 'If you did not ask for this, ignore this message: nothing changes without the link.',
  };
  return addressConfirmationMail(texts, appUrl, to, name, token, expireHours);
}

/** Sent to the current address when its user asks to move to another one. */
export function emailChangeRequestedMail(to: string, name: string, newEmail: string): Mail {
  return compose({
    to,
    subject: 'Your e-mail address is about to change',
    name,
    paragraphs: [
      [
        'Someone signed in to your account asked to change its e-mail address to ',
        { value: newEmail },
        '. A link to confirm it was sent there.',
      ],
      ['Until that link is followed, you sign in and recover your password with this address, and mail keeps coming here.'],
    ],
    footer: [
      'If this was not you, change your password now and sign out of every session: the change happens only if the link sent to ',
      { value: newEmail },
      ' is followed.',
    ],
  });
}

/** Sent to the previous address when an administrator changes a user's address. */
export function emailChangedMail(to: string, name: string, newEmail: string): Mail {
  return compose({
    to,
    subject: 'Your e-mail address was changed',
    name,
    paragraphs: [
      ['An administrator changed the e-mail address of your account to ', { value: newEmail }, '. This address no longer signs in.'],
    ],
    footer: ['If you did not expect this, contact your administrator.'],
  });
}

export function passwordResetMail(appUrl: string, to: string, name: string, token: string, expireMinutes: number): Mail {
  return compose({
    to,
    subject: 'Reset your password',
    name,
    paragraphs: [['Someone asked to reset the password of your account. Open the link below to choose a new one.']],
    action: { label: 'Choose a new password', link: `${appUrl}/reset-password?token=${token}`, lifetime: plural(expireMinutes, 'minute') },
    footer: ['If you did not ask for this, ignore this message: your password stays as it is. A newer request voids this link.'],
  });
}

/**
 * A sign-in code and link. `signup`: the address has no account yet, and using either creates one.
 * The code stands apart and unbroken, so that it reads easily and copies whole.
 */
export function emailCodeMail(to: string, name: string, code: string, link: string, expireMinutes: number, signup: boolean): Mail {
  return compose({
    to,
    subject: signup ? 'Your code to create your account' : 'Your sign-in code',
    name,
    paragraphs: [
      [
        signup
          ? 'Someone asked to create an account with this e-mail address. Enter this code to do so:'
          : 'Someone asked to sign in to your account with this e-mail address. Enter this code to sign in:',
      ],
    ],
    code,
    action: { label: signup ? 'Create my account' : 'Sign me in', link, lifetime: plural(expireMinutes, 'minute') },
    footer: [
      'If you did not ask for this, ignore this message: nothing happens without the code or the link. Never tell the code to anyone who asks for it.',
    ],
  });
}

/**
 * The code that proves an address a provider gave without vouching for it: no link (the sign-in
 * goes on where it started, in the application that asked), the code alone.
 */
export function providerAddressMail(to: string, name: string, code: string, provider: string, expireMinutes: number): Mail {
  return compose({
    to,
    subject: 'Your code to confirm your e-mail address',
    name,
    paragraphs: [
      [
        'Someone is signing in with ',
        { value: provider },
        ', which gave this e-mail address without confirming it. Enter this code where you are signing in to show the address is yours:',
      ],
      [`The code works once and expires in ${plural(expireMinutes, 'minute')}.`],
    ],
    code,
    footer: [
      'If you are not signing in, ignore this message: without the code nothing happens. Never tell the code to anyone who asks for it.',
    ],
  });
}

/** How a password came to change, in the notice about it. */
export type PasswordChange = 'changed' | 'reset' | 'set_by_admin';

const PASSWORD_CHANGES: Record<PasswordChange, string> = {
  changed: 'The password of your account was just changed.',
  reset: 'The password of your account was just reset with a link sent to this address; every session was signed out.',
  set_by_admin: 'An administrator just set a new password for your account.',
};

/** Sent to the account's address after every change or reset of its password. */
export function passwordChangedMail(to: string, name: string, how: PasswordChange): Mail {
  return compose({
    to,
    subject: 'Your password was changed',
    name,
    paragraphs: [[PASSWORD_CHANGES[how]]],
    footer: ['If this was not you, reset your password now with "Forgot password", and contact your administrator.'],
  });
}

/** How an address was proven, in the notice of a claimed account. */
const PROOFS: Record<'email_code' | 'provider' | 'password_reset', string> = {
  email_code: 'with a code or link sent to it',
  provider: 'by signing in with a provider',
  password_reset: 'with a password reset link sent to it',
};

/** What a claim of an account by its address ended, as its notice lists it. */
export interface EndedWaysList {
  password: boolean;
  sessions: number;
  apiKeys: number;
  factors: number;
  identities: string[];
}

/**
 * Sent when an address that was never verified is proven and every way in set up before is
 * removed: what went, and why, for the person who now holds the account.
 */
export function mailboxClaimedMail(to: string, name: string, route: keyof typeof PROOFS, ended: EndedWaysList): Mail {
  const removed = [
    ...(ended.password ? ['the password'] : []),
    ...(ended.sessions > 0 ? [`${plural(ended.sessions, 'signed-in session')} (signed out)`] : []),
    ...(ended.apiKeys > 0 ? [plural(ended.apiKeys, 'API key')] : []),
    ...(ended.factors > 0 ? [plural(ended.factors, 'second factor')] : []),
    ...(ended.identities.length > 0 ? [`the linked sign-in with ${ended.identities.join(', ')}`] : []),
  ];
  return compose({
    to,
    subject: 'Your e-mail address was confirmed, and earlier sign-in methods were removed',
    name,
    paragraphs: [
      [
        `This address was just confirmed for your account ${PROOFS[route]}. It had not been confirmed before, so everything set up on the account until now was removed: ${removed.join('; ')}.`,
      ],
      ['If you did not set these up yourself, someone else had tried to use your address; none of it can reach your account any more.'],
      ...(route === 'password_reset' || !ended.password
        ? []
        : [['To sign in with a password again, choose a new one with "Forgot password".']]),
    ],
    footer: ['If you did not confirm this address just now, reset your password with "Forgot password" and contact your administrator.'],
  });
}

/** A way to sign in or to act as the user, added to an account, as its notice names it. */
export type NewSignInMethod =
  | { kind: 'identity'; provider: string }
  | { kind: 'passkey'; name: string }
  | { kind: 'totp'; name: string }
  | { kind: 'recovery_codes' }
  | { kind: 'api_key'; name: string; prefix: string };

/** Where the change was made from, as the session that made it knows it. */
export interface ChangeOrigin {
  at: Date;
  ip: string | null;
  userAgent: string | null;
}

/** What was added, in the notice's words, and how its owner takes it away if it was not them. */
function described(method: NewSignInMethod): { what: Paragraph; undo: string } {
  switch (method.kind) {
    case 'identity':
      return { what: ['A sign-in with the provider "', { value: method.provider }, '" was linked to your account'], undo: 'unlink it' };
    case 'passkey':
      return { what: ['A passkey ("', { value: method.name }, '") was registered for your account'], undo: 'remove the passkey' };
    case 'totp':
      return {
        what: ['An authenticator app ("', { value: method.name }, '") was added to your account as a second factor'],
        undo: 'remove the authenticator app',
      };
    case 'recovery_codes':
      return { what: ['A new set of recovery codes was made for your account; the earlier set no longer works'], undo: 'make a new set' };
    case 'api_key':
      return {
        what: ['An API key ("', { value: method.name }, '", starting ', { value: method.prefix }, ') was created for your account'],
        undo: 'delete the key',
      };
  }
}

/** Sent to the account's address each time a way to sign in or to act as the user is added. */
export function newSignInMethodMail(to: string, name: string, method: NewSignInMethod, origin: ChangeOrigin): Mail {
  const { what, undo } = described(method);
  const when = `${origin.at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return compose({
    to,
    subject: 'A new sign-in method was added to your account',
    name,
    paragraphs: [
      [...what, ' on ', when, '.'],
      [
        'It was done from the address ',
        { value: origin.ip ?? 'unknown' },
        ', with ',
        { value: origin.userAgent ?? 'an unknown browser or program' },
        '.',
      ],
    ],
    footer: [
      `If this was not you, someone else can use your account: ${undo}, change your password (or reset it with "Forgot password"), sign out of every session, and contact your administrator.`,
    ],
  });
}

/** Sent to a user when an administrator starts acting as them (IMPERSONATION_NOTICE). */
export function impersonationNoticeMail(to: string, name: string, admin: { name: string; email: string }, minutes: number, at: Date): Mail {
  const when = `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return compose({
    to,
    subject: 'An administrator is acting as you',
    name,
    paragraphs: [
      [
        'The administrator ',
        { value: admin.name },
        ' (',
        { value: admin.email },
        `) started acting as you on ${when}, for at most ${plural(minutes, 'minute')}, usually to help with a support request.`,
      ],
      [
        "They can see and change what you can, but not your password, second factors, passkeys, API keys or sessions. The account's activity names them for what they do.",
      ],
    ],
    footer: ['If you did not expect this, contact your administrator.'],
  });
}

/** What an invitation mail says of the organisation and of who invited. */
export interface InvitationDetails {
  organization: string;
  role: string;
  inviter: string | null;
  link: string;
  expireMinutes: number;
}

/**
 * An invitation to join an organisation, to an address that may have no account yet: the link
 * leads to the console, where the person signs in (or signs up) with this address to accept.
 */
export function invitationMail(to: string, invitation: InvitationDetails): Mail {
  const who: Paragraph = invitation.inviter === null ? ['You were'] : [{ value: invitation.inviter }, ' invited you'];
  const minutes = invitation.expireMinutes;
  const lifetime =
    minutes % 1440 === 0 ? plural(minutes / 1440, 'day') : minutes % 60 === 0 ? plural(minutes / 60, 'hour') : plural(minutes, 'minute');
  return compose({
    to,
    subject: 'You are invited to join an organization',
    name: to,
    paragraphs: [
      [
        ...who,
        invitation.inviter === null ? ' invited to join ' : ' to join ',
        { value: invitation.organization },
        ' as ',
        { value: invitation.role },
        '.',
      ],
      [
        'Open the link below and sign in with this e-mail address to accept; if you have no account yet, sign up with this address and confirm it first. The invitation is accepted only by whoever signs in with this address.',
      ],
    ],
    action: { label: 'See the invitation', link: invitation.link, lifetime },
    footer: ['If you do not want to join, decline the invitation or ignore this message: nothing changes until you accept it.'],
  });
}
