import Router from '@koa/router';
import type { Context } from 'koa';
import type { EmailCodeSignIn } from '../email-code/email-code-sign-in.js';
import { Conflict, Forbidden, InvalidToken, MfaRequired, RateLimited, Unavailable, Validation } from '../errors.js';
import { clientOf } from '../http/request.js';
import { contentSecurityPolicyWith } from '../http/security.js';
import { stateOf } from '../http/state.js';
import type { OperationId } from '../handlers/types.js';
import { allowedRedirect, type RedirectConfig } from '../redirects/allow-list.js';
import type { AccountService } from '../users/account.js';
import { MIN_PASSWORD_LENGTH } from '../passwords/passwords.js';
import type { TokenPair } from '../sessions/session-start.js';
import { FormGuard, readForm } from './form-guard.js';
import { escape, form, page, paragraph, passwordField, type Notice } from './html.js';

export interface AccountPagesOptions {
  account: AccountService;
  /** SECRET_KEY, which signs the forms' CSRF values. */
  secret: string;
  /** The per-client rate limit of the API, when on: a post counts as the operation it performs. */
  guard?: (ctx: Context) => Promise<void>;
  /** The name the pages show, the contract's title. */
  service: string;
  /** Sign-in by e-mailed link, when EMAIL_CODE_ENABLED: the `/sign-in` page exists only then. */
  emailCode?: Pick<EmailCodeSignIn, 'addressOf' | 'verify'>;
  /** AUTH_REDIRECT_URLS: where `/sign-in` may send a person once signed in. */
  redirects: RedirectConfig;
}

const VERIFY = '/verify-email';
const RESET = '/reset-password';
const SIGN_IN = '/sign-in';

const USED_LINK =
  'This link is not valid: it has expired, has already been used, or a newer one was sent. Ask for a new link and use the latest one you receive.';
const REFUSED_FORM =
  'This form could not be accepted (it was not sent from this page in this browser). Open the link from the e-mail again and use the form on that page.';
const INCOMPLETE_LINK =
  'This link is incomplete. Open it exactly as it appears in the e-mail, or paste the whole address into your browser.';
const USED_SIGN_IN_LINK =
  'This link is not valid: it has expired, has already been used (or its code was), or a newer one was sent. Ask for a new one and use the latest e-mail.';
const UNKNOWN_DESTINATION =
  'This link leads on to an address this service does not send anyone to. Sign in from the application itself and ask for a new link there.';

/**
 * The pages the links in the account e-mails open, when APP_URL is this service: `/verify-email`,
 * `/reset-password` and `/sign-in`, served beside the API like the docs pages, not part of the
 * contract. Opening a page never uses the token (mail scanners open links); the form on it does,
 * through the same rules as `POST /api/auth/verify-email`, `POST /api/auth/reset-password` and
 * `POST /api/auth/email-code/verify`. No JavaScript.
 */
export function accountPagesRouter(options: AccountPagesOptions): Router {
  const { account, service } = options;
  const forms = new FormGuard(options.secret);
  const router = new Router();
  const show = (ctx: Context, status: number, title: string, body: string, notice?: Notice) => {
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    // The address holds the token: no cache keeps it, nor the page.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = page(service, title, body, notice);
  };

  const verifyForm = (ctx: Context, token: string) =>
    paragraph('Press the button to confirm that this e-mail address is yours.') +
    form(VERIFY, { token, csrf: forms.issue(ctx, VERIFY) }, '', 'Confirm my e-mail address');
  const resetForm = (ctx: Context, token: string) =>
    form(
      RESET,
      { token, csrf: forms.issue(ctx, RESET) },
      passwordField(
        'new_password',
        'New password',
        `At least ${MIN_PASSWORD_LENGTH} characters; not a common password, nor your e-mail address.`,
      ) + passwordField('confirm_password', 'Repeat the new password', 'The same password again, to rule out a typing mistake.'),
      'Set the new password',
    );

  router.get(VERIFY, (ctx) => {
    const token = tokenOf(ctx.query.token);
    if (!token) return show(ctx, 400, 'Confirm your e-mail address', '', { kind: 'error', text: INCOMPLETE_LINK });
    show(ctx, 200, 'Confirm your e-mail address', verifyForm(ctx, token));
  });

  router.post(VERIFY, async (ctx) => {
    const title = 'Confirm your e-mail address';
    await submit(ctx, title, VERIFY, 'verifyEmail', async (fields, again) => {
      try {
        const user = await account.verifyEmail(fields.token, clientOf(ctx));
        show(ctx, 200, title, paragraph('You can close this page.'), {
          kind: 'success',
          text: `Your e-mail address ${user.email} is confirmed.`,
        });
      } catch (error) {
        if (error instanceof Conflict) {
          const text = 'Another account has taken this e-mail address meanwhile: it cannot be confirmed for yours.';
          return show(ctx, 409, title, '', { kind: 'error', text });
        }
        if (error instanceof RateLimited || error instanceof Unavailable)
          return refusal(ctx, error, (status, text) => again(status, verifyForm(ctx, fields.token), text));
        throw error;
      }
    });
  });

  router.get(RESET, (ctx) => {
    const token = tokenOf(ctx.query.token);
    if (!token) return show(ctx, 400, 'Choose a new password', '', { kind: 'error', text: INCOMPLETE_LINK });
    show(ctx, 200, 'Choose a new password', resetForm(ctx, token));
  });

  router.post(RESET, async (ctx) => {
    const title = 'Choose a new password';
    await submit(ctx, title, RESET, 'resetPassword', async (fields, again) => {
      const retry = (status: number, text: string) => again(status, resetForm(ctx, fields.token), text);
      const password = fields.new_password ?? '';
      if (password !== (fields.confirm_password ?? ''))
        return retry(422, 'The two passwords are not the same. Type the new password twice.');
      if ([...password].length < MIN_PASSWORD_LENGTH)
        return retry(422, `The new password must be at least ${MIN_PASSWORD_LENGTH} characters long.`);
      try {
        await account.resetPassword(fields.token, password, clientOf(ctx));
        show(ctx, 200, title, paragraph('Sign in with the new password. Every device that was signed in has been signed out.'), {
          kind: 'success',
          text: 'Your password has been changed.',
        });
      } catch (error) {
        if (error instanceof Validation)
          return retry(422, `The new password ${error.details.map((d) => d.message).join('; ')}. Choose another one.`);
        if (error instanceof RateLimited || error instanceof Unavailable) return refusal(ctx, error, retry);
        throw error;
      }
    });
  });

  const emailCode = options.emailCode;
  if (emailCode) {
    const title = 'Sign in';
    /** Where a signed-in person goes on to: the link's `redirect_to`, on the allow-list; null when it names none. */
    const destinationOf = (value: unknown): URL | null | undefined =>
      value === undefined || value === '' ? null : typeof value === 'string' ? allowedRedirect(options.redirects, value) : undefined;
    const signInForm = (ctx: Context, token: string, email: string, destination: URL | null) => {
      // The post may end at the application: the page's form-action allows its origin, and only it.
      if (destination) ctx.set('Content-Security-Policy', contentSecurityPolicyWith([destination.origin]));
      const hidden = { token, ...(destination ? { redirect_to: destination.href } : {}), csrf: forms.issue(ctx, SIGN_IN) };
      const next = destination
        ? `<p>You will then go back to <strong>${escape(destination.host)}</strong>.</p>\n`
        : paragraph('This signs you in to your account and confirms your e-mail address.');
      return (
        `<p>Press the button to sign in as <strong>${escape(email)}</strong>.</p>\n` +
        next +
        form(SIGN_IN, hidden, '', `Sign in as ${email}`) +
        paragraph('If you did not ask to sign in, close this page: nothing happens without the button.')
      );
    };

    router.get(SIGN_IN, async (ctx) => {
      const token = tokenOf(ctx.query.token);
      if (!token) return show(ctx, 400, title, '', { kind: 'error', text: INCOMPLETE_LINK });
      const destination = destinationOf(ctx.query.redirect_to);
      if (destination === undefined) return show(ctx, 400, title, '', { kind: 'error', text: UNKNOWN_DESTINATION });
      const email = await emailCode.addressOf(token);
      if (!email) return show(ctx, 400, title, '', { kind: 'error', text: USED_SIGN_IN_LINK });
      show(ctx, 200, title, signInForm(ctx, token, email, destination));
    });

    router.post(SIGN_IN, async (ctx) => {
      await submit(ctx, title, SIGN_IN, 'verifyEmailCode', async (fields) => {
        const destination = destinationOf(fields.redirect_to);
        if (destination === undefined) return show(ctx, 400, title, '', { kind: 'error', text: UNKNOWN_DESTINATION });
        try {
          const { user, tokens } = await emailCode.verify({ token: fields.token }, clientOf(ctx));
          if (destination) return goOn(ctx, destination, tokenFragment(tokens));
          show(ctx, 200, title, paragraph('You can close this page.'), { kind: 'success', text: `You are signed in as ${user.email}.` });
        } catch (error) {
          if (error instanceof MfaRequired) {
            if (destination) return goOn(ctx, destination, { mfa_token: error.mfaToken, methods: error.methods.join(',') });
            const text =
              'Your account asks for a second step, which this page cannot take. Sign in from the application, with a new code if you like.';
            return show(ctx, 403, title, '', { kind: 'error', text });
          }
          if (error instanceof InvalidToken) return show(ctx, 400, title, '', { kind: 'error', text: USED_SIGN_IN_LINK });
          if (error instanceof Forbidden) return show(ctx, 403, title, '', { kind: 'error', text: `${error.message}.` });
          if (error instanceof RateLimited || error instanceof Unavailable)
            return refusal(ctx, error, (status, text) => show(ctx, status, title, '', { kind: 'error', text }));
          throw error;
        }
      });
    });
  }

  /**
   * A post of one of the forms: counted against the rate limit as the operation it performs, then
   * accepted only from this service's page in this browser (FormGuard) and with a token; `work` gets
   * the fields and a way to show the form again with a message. A token the service refuses (unknown,
   * used, expired) ends on a page that says so, without the form.
   */
  async function submit(
    ctx: Context,
    title: string,
    path: string,
    operationId: OperationId,
    work: (
      fields: Record<string, string> & { token: string },
      again: (status: number, body: string, text: string) => void,
    ) => Promise<void>,
  ): Promise<void> {
    const refused = (status: number, text: string) => show(ctx, status, title, '', { kind: 'error', text });
    stateOf(ctx).operationId = operationId;
    try {
      await options.guard?.(ctx);
    } catch (error) {
      return refusal(ctx, error, refused);
    }
    const fields = await readForm(ctx);
    const token = tokenOf(fields?.token);
    if (!fields || !token || !forms.accepts(ctx, path, fields.csrf)) return refused(403, REFUSED_FORM);
    try {
      await work({ ...fields, token }, (status, body, text) => show(ctx, status, title, body, { kind: 'error', text }));
    } catch (error) {
      if (error instanceof InvalidToken) return refused(400, USED_LINK);
      throw error;
    }
  }

  return router;
}

/**
 * The person goes on to the application with what it needs in the address's fragment, which a
 * browser sends to no server and leaves out of Referer headers and access logs.
 */
function goOn(ctx: Context, destination: URL, fragment: Record<string, string>): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.status = 303;
  ctx.redirect(`${destination.href}#${new URLSearchParams(fragment).toString()}`);
  // Koa's own body would repeat the address, tokens and all.
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = 'Signed in: on to the application.';
}

/** A session's tokens as the fragment of the address the person goes on to (GoTrue's names). */
function tokenFragment(tokens: TokenPair): Record<string, string> {
  return {
    access_token: tokens.accessToken,
    refresh_token: tokens.refreshToken,
    token_type: 'bearer',
    expires_in: String(tokens.expiresInSeconds),
  };
}

/** A token as e-mailed (base64url, well under this length), or undefined. */
function tokenOf(value: unknown): string | undefined {
  return typeof value === 'string' && /^[A-Za-z0-9_-]{1,200}$/.test(value) ? value : undefined;
}

/** The refusals every form may meet (too many attempts, the service overloaded or its database away); anything else is thrown on. */
function refusal(ctx: Context, error: unknown, show: (status: number, text: string) => void): void {
  if (error instanceof RateLimited) {
    ctx.set({ ...error.limits, 'Retry-After': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))) });
    return show(429, `${error.message}. Try again in a minute.`);
  }
  if (error instanceof Unavailable) {
    if (error.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(error.retryAfterSeconds));
    return show(503, 'The service cannot do this right now. Try again in a minute.');
  }
  throw error;
}
