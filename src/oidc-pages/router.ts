import { createHash, randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import {
  BadRequest,
  EmailVerificationRequired,
  Forbidden,
  InvalidCode,
  InvalidCredentials,
  InvalidPasskey,
  InvalidToken,
  MfaRequired,
  NotFound,
  RateLimited,
  SsoRequired,
  Unauthorized,
  Unavailable,
  Validation,
} from '../errors.js';
import { isEmailAddress, MAX_EMAIL_LENGTH } from '../email-address.js';
import type { EmailCodeSignIn } from '../email-code/email-code-sign-in.js';
import type { OperationId } from '../handlers/types.js';
import { toApiError } from '../http/errors.js';
import { clientOf } from '../http/request.js';
import { stateOf } from '../http/state.js';
import type { InteractionView, OidcInteractions } from '../oidc/interactions.js';
import type { AccountService } from '../users/account.js';
import type { AuthService } from '../sessions/auth.js';
import type { IdentityProviderRegistry } from '../providers/registry.js';
import type { ProviderSignIn } from '../providers/sign-in.js';
import type { RedirectConfig } from '../redirects/allow-list.js';
import type { MfaSignIn } from '../mfa/mfa-sign-in.js';
import type { OrganizationSignIn } from '../organizations/sign-in-policy.js';
import type { TokenPair } from '../sessions/session-start.js';
import type { TokenService } from '../sessions/tokens.js';
import { FormGuard, readForm } from '../account-pages/form-guard.js';
import { show as showPage, type Notice, type Shown } from './layout.js';
import * as views from './views.js';

export interface OidcPagesOptions {
  interactions: OidcInteractions;
  auth: AuthService;
  mfa: MfaSignIn;
  account: AccountService;
  tokens: TokenService;
  /** The sign-in providers that are on, as `GET /api/auth/providers` lists them. */
  providers: Pick<IdentityProviderRegistry, 'enabled'>;
  providerSignIn: Pick<ProviderSignIn, 'authorize' | 'exchange' | 'verifyAddress'>;
  emailCode: Pick<EmailCodeSignIn, 'request' | 'verify'>;
  /** Where an address signs in: the page asks for it first when some verified domain has its own provider. */
  organizationSignIn: Pick<OrganizationSignIn, 'singleSignOn' | 'routesByAddress'>;
  /** EMAIL_CODE_ENABLED: the page offers a code by e-mail. */
  emailCodes: boolean;
  /** APP_URL: a provider sends the person back to PROVIDER_RETURN at its origin. */
  appUrl: string;
  /** SECRET_KEY, which signs the forms' CSRF values. */
  secret: string;
  /** The per-client rate limit of the API, when on: a post counts as the API operation it performs. */
  guard?: (ctx: Context) => Promise<void>;
  /** BRAND_NAME. */
  service: string;
}

/** Where the interactions live (oidc-provider's `interactions.url`). */
export const INTERACTION_PREFIX = '/oauth2/interaction';

/** The cookie that carries the second step of a sign-in (its mfa_token) between the two pages of one interaction. */
const SECOND_STEP_COOKIE = 'oidc_second_step';
/** Where a sign-in provider sends the person back: one fixed address, so that it can be one exact entry of the allow-list. */
export const PROVIDER_RETURN = `${INTERACTION_PREFIX}/provider-return`;
/**
 * The allow-list of provider sign-ins with the hosted pages' return address added (one exact URL at
 * APP_URL's origin): the pages start provider sign-ins whatever AUTH_REDIRECT_URLS lists.
 */
export function withProviderReturn(redirects: RedirectConfig, appUrl: string): RedirectConfig {
  const href = new URL(PROVIDER_RETURN, appUrl).href;
  return Object.freeze({ allowed: Object.freeze([...redirects.allowed, Object.freeze({ kind: 'exact' as const, href })]) });
}

/** The cookie that carries the verification token of a provider sign-in whose address waits for its mailed code. */
const ADDRESS_PROOF_COOKIE = 'oidc_address_proof';
/** The cookie that carries a provider sign-in's interaction and PKCE verifier, from the page to the provider and back. */
const PROVIDER_COOKIE = 'oidc_provider_flow';
const PROVIDER_FLOW_MS = 10 * 60 * 1000;

const REFUSED_FORM =
  'This form could not be accepted (it was not sent from this page in this browser). Go back to the application and start signing in again.';
const WRONG_PASSWORD = 'The e-mail address or the password is not right. Check both and try again.';
const SECOND_STEP_EXPIRED = 'This sign-in took too long or was already used. Enter your e-mail address and password again.';

/**
 * The hosted pages of the OpenID Connect provider, under `/oauth2/interaction/:uid`: sign in (e-mail
 * and password, a passkey, the sign-in providers, a link to reset the password), the second factor,
 * consent, and the way back to the application. Each post goes through the same services, lockout,
 * hashing share, rate limits and audit trail as the API operation it stands for, opens a service
 * session, and hands the result to the provider core (`OidcInteractions`). No JavaScript but the
 * passkey ceremony's; every form carries the signed double-submit CSRF value of FormGuard.
 */
export function oidcPagesRouter(options: OidcPagesOptions): Router {
  const { interactions, auth, mfa, service } = options;
  const forms = new FormGuard(options.secret);
  const router = new Router();
  const at = (path: string) => `${INTERACTION_PREFIX}/:uid${path}`;
  const show = (ctx: Context, shown: Shown, view?: InteractionView) =>
    // A post's answer may redirect to the application: the page's form-action must allow its redirect URI.
    showPage(ctx, service, view?.redirectUri ? { ...shown, formTargets: [view.redirectUri] } : shown);
  const base = (view: InteractionView) => `${INTERACTION_PREFIX}/${encodeURIComponent(view.uid)}`;
  const csrfFor = (ctx: Context, view: InteractionView) => (path: string) => forms.issue(ctx, `${base(view)}${path}`);

  /**
   * The sign-in page: with `email` (or when no organisation signs its people in with its own
   * provider), every way to sign in; else the address first, the next step by its domain.
   */
  const signInPage = async (ctx: Context, view: InteractionView, status = 200, notice?: Notice, email?: string) => {
    const providers = (await options.providers.enabled()).map(({ slug, name }) => ({ slug, name }));
    if (email === undefined && (await options.organizationSignIn.routesByAddress())) {
      const body = views.identify({ view, base: base(view), csrf: csrfFor(ctx, view), providers, email: view.loginHint });
      return show(ctx, { status, title: 'Sign in', notice: notice ?? reasonNotice(view), body }, view);
    }
    show(
      ctx,
      {
        status,
        title: 'Sign in',
        notice: notice ?? reasonNotice(view),
        body: views.signIn({
          view,
          base: base(view),
          csrf: csrfFor(ctx, view),
          providers,
          emailCodes: options.emailCodes,
          email: email ?? view.loginHint,
        }),
      },
      view,
    );
  };
  const secondStepPage = (ctx: Context, view: InteractionView, methods: readonly string[], status = 200, notice?: Notice) =>
    show(
      ctx,
      {
        status,
        title: 'Second step',
        notice,
        body: views.secondFactor({ view, base: base(view), csrf: csrfFor(ctx, view), methods }),
      },
      view,
    );
  const consentPage = (ctx: Context, view: InteractionView) =>
    show(
      ctx,
      {
        status: 200,
        title: 'Allow access',
        body: views.consent({ view, base: base(view), csrf: csrfFor(ctx, view), service }),
        notice: view.client.registered ? unverifiedNotice(view, service) : undefined,
      },
      view,
    );

  /** A person whose organisation requires its provider, refused another way in: that provider is all the page offers. */
  const organizationProviderPage = async (ctx: Context, view: InteractionView, error: SsoRequired) => {
    const provider = (await options.providers.enabled()).find((p) => p.slug === error.provider) ?? {
      slug: error.provider,
      name: error.provider,
    };
    show(
      ctx,
      {
        status: 403,
        title: 'Sign in with your organisation',
        notice: errorNotice(`${error.message}.`.replace(`with ${provider.slug}.`, `with ${provider.name}.`)),
        body: views.organizationProvider({
          view,
          base: base(view),
          csrf: csrfFor(ctx, view),
          provider: { slug: provider.slug, name: provider.name },
        }),
      },
      view,
    );
  };
  /** Where the address signs in: its organisation's provider (the browser sent there), or every other way with it filled in. */
  const routeAddress = async (ctx: Context, view: InteractionView, email: string) => {
    const sso = await options.organizationSignIn.singleSignOn(email);
    if (!sso) return signInPage(ctx, view, 200, undefined, email);
    ctx.status = 303;
    ctx.redirect(`${base(view)}/provider/${encodeURIComponent(sso.provider.slug)}`);
  };

  /** The pending interaction, or a page that says it is gone (the core's 404/400). */
  const pending = async (ctx: Context): Promise<InteractionView | undefined> => {
    try {
      return await interactions.details(ctx);
    } catch (error) {
      if (!(error instanceof NotFound || error instanceof BadRequest)) throw error;
      show(ctx, {
        status: toApiError(error).status,
        title: 'Sign-in expired',
        body: views.gone(),
        notice: { kind: 'error', text: 'This sign-in is no longer under way: it expired, or it was already finished.' },
      });
      return undefined;
    }
  };

  /**
   * A post: counted as `operationId` against the rate limit, then accepted only from a form this
   * service showed in this browser for this very path and interaction.
   */
  const posted = async (
    ctx: Context,
    path: string,
    operationId: OperationId | undefined,
  ): Promise<{ view: InteractionView; fields: Record<string, string> } | undefined> => {
    const view = await pending(ctx);
    if (!view) return undefined;
    if (operationId) {
      stateOf(ctx).operationId = operationId;
      try {
        await options.guard?.(ctx);
      } catch (error) {
        await refusal(ctx, error, (status, text) =>
          show(ctx, { status, title: 'Sign in', body: views.back(base(view)), notice: errorNotice(text) }),
        );
        return undefined;
      }
    }
    const fields = await readForm(ctx);
    if (!fields || !forms.accepts(ctx, `${base(view)}${path}`, fields.csrf)) {
      show(ctx, { status: 403, title: 'Sign in', body: views.back(base(view)), notice: errorNotice(REFUSED_FORM) });
      return undefined;
    }
    return { view, fields };
  };

  /** A person proved who they are: the service session opened, the provider takes it from here. */
  const signedIn = async (ctx: Context, view: InteractionView, userId: number, tokens: TokenPair) => {
    ctx.cookies.set(SECOND_STEP_COOKIE, null, { path: base(view) });
    ctx.cookies.set(ADDRESS_PROOF_COOKIE, null, { path: base(view) });
    const verified = options.tokens.verify(tokens.accessToken, 'access');
    if (!verified.ok) throw new Error('a session just opened has no valid access token');
    const { sid, amr, aal } = verified.claims;
    await interactions.finishLogin(ctx, {
      userId: String(userId),
      sessionId: sid,
      amr: amr ?? ['pwd'],
      acr: aal ?? 'aal1',
    });
  };

  /** The first step done by a user with a second factor: its token kept in this browser, its page shown. */
  const secondStepNeeded = (ctx: Context, view: InteractionView, error: MfaRequired) => {
    ctx.cookies.set(SECOND_STEP_COOKIE, error.mfaToken, {
      httpOnly: true,
      sameSite: 'strict',
      secure: ctx.secure,
      path: base(view),
      overwrite: true,
    });
    secondStepPage(ctx, view, error.methods);
  };

  // The provider's answer comes back here (the service's callback passed it on), and goes on to the interaction it
  // belongs to. Registered first: its path would otherwise read as an interaction's.
  router.get(PROVIDER_RETURN, (ctx) => {
    const [uid] = (ctx.cookies.get(PROVIDER_COOKIE) ?? '').split('.');
    if (!uid || !/^[\w-]{1,100}$/.test(uid)) {
      return show(ctx, {
        status: 400,
        title: 'Sign-in expired',
        body: views.gone(),
        notice: errorNotice('This sign-in is no longer under way: it expired, or it was already finished.'),
      });
    }
    ctx.status = 303;
    ctx.redirect(`${INTERACTION_PREFIX}/${encodeURIComponent(uid)}/provider-return${ctx.search}`);
  });

  router.get(at(''), async (ctx) => {
    const view = await pending(ctx);
    if (!view) return;
    if (view.prompt === 'consent') {
      // The core grants first-party clients without asking; should one still ask, nothing is shown.
      if (view.client.firstParty) return interactions.finishConsent(ctx, view.scopes);
      return consentPage(ctx, view);
    }
    // An application that names the person (login_hint) skips the first step, when the hint is an address.
    if (view.loginHint && isEmailAddress(view.loginHint) && (await options.organizationSignIn.routesByAddress())) {
      try {
        return await routeAddress(ctx, view, view.loginHint);
      } catch (error) {
        if (!(error instanceof Validation)) throw error;
      }
    }
    await signInPage(ctx, view);
  });

  router.post(at('/identify'), async (ctx) => {
    const got = await posted(ctx, '/identify', 'findSingleSignOn');
    if (!got) return;
    const { view, fields } = got;
    const email = (fields.email ?? '').trim();
    const again = (status: number, text: string) => signInPage(ctx, view, status, errorNotice(text));
    if (!email || email.length > MAX_EMAIL_LENGTH) return again(422, 'Enter your e-mail address.');
    if (!isEmailAddress(email)) return again(422, 'Enter your e-mail address, as name@example.com.');
    try {
      await routeAddress(ctx, view, email);
    } catch (error) {
      if (error instanceof Validation) return again(422, 'Enter your e-mail address, as name@example.com.');
      await refusal(ctx, error, again);
    }
  });

  router.post(at('/login'), async (ctx) => {
    const got = await posted(ctx, '/login', 'loginJson');
    if (!got) return;
    const { view, fields } = got;
    const email = (fields.email ?? '').trim();
    const retry = (status: number, text: string) => signInPage(ctx, view, status, errorNotice(text), email);
    if (!email || !fields.password) return retry(422, 'Enter your e-mail address and your password.');
    try {
      const { user, tokens } = await auth.login(email, fields.password, clientOf(ctx));
      await signedIn(ctx, view, user.id, tokens);
    } catch (error) {
      if (error instanceof MfaRequired) return secondStepNeeded(ctx, view, error);
      if (error instanceof SsoRequired) return organizationProviderPage(ctx, view, error);
      if (error instanceof InvalidCredentials) return retry(401, WRONG_PASSWORD);
      if (error instanceof Forbidden) return retry(403, `${error.message}.`);
      await refusal(ctx, error, retry);
    }
  });

  router.post(at('/second-step'), async (ctx) => {
    const got = await posted(ctx, '/second-step', 'verifyMfa');
    if (!got) return;
    const { view, fields } = got;
    const mfaToken = ctx.cookies.get(SECOND_STEP_COOKIE);
    if (!mfaToken) return signInPage(ctx, view, 401, errorNotice(SECOND_STEP_EXPIRED));
    const method = (['totp', 'recovery_code', 'webauthn'] as const).find((m) => m === fields.method);
    const credential = method === 'webauthn' ? parseJson(fields.credential) : undefined;
    const methods = (fields.methods ?? '').split(',').filter(Boolean);
    const again = (status: number, text: string) => secondStepPage(ctx, view, methods, status, errorNotice(text));
    if (!method || (method === 'webauthn' ? !credential : !fields.code?.trim())) return again(422, 'Enter the code, or use your passkey.');
    try {
      const { user, tokens } = await mfa.verify(
        { mfa_token: mfaToken, method, code: fields.code?.replace(/\s+/g, ''), credential: credential as never },
        clientOf(ctx),
      );
      await signedIn(ctx, view, user.id, tokens);
    } catch (error) {
      if (error instanceof Unauthorized) return signInPage(ctx, view, 401, errorNotice(SECOND_STEP_EXPIRED));
      if (error instanceof InvalidCode) return again(401, 'That code is not right, or it was already used. Try again.');
      if (error instanceof InvalidPasskey) return again(401, 'That passkey was not accepted. Try again, or enter a code.');
      await refusal(ctx, error, again);
    }
  });

  router.post(at('/second-step/passkey-options'), async (ctx) => {
    const got = await posted(ctx, '/second-step/passkey-options', undefined);
    if (!got) return;
    const mfaToken = ctx.cookies.get(SECOND_STEP_COOKIE);
    try {
      if (!mfaToken) throw new Unauthorized();
      json(ctx, 200, { options: await mfa.webauthnOptions(mfaToken) });
    } catch (error) {
      if (error instanceof Unauthorized) return json(ctx, 401, { error: 'expired' });
      throw error;
    }
  });

  router.post(at('/passkey/options'), async (ctx) => {
    const got = await posted(ctx, '/passkey/options', undefined);
    if (!got) return;
    const { challengeId, options: publicKey } = await mfa.passkeyLoginOptions();
    json(ctx, 200, { challenge_id: challengeId, options: publicKey });
  });

  router.post(at('/passkey'), async (ctx) => {
    const got = await posted(ctx, '/passkey', 'passkeyLogin');
    if (!got) return;
    const { view, fields } = got;
    const credential = parseJson(fields.credential);
    const retry = (status: number, text: string) => signInPage(ctx, view, status, errorNotice(text));
    if (!credential || !fields.challenge_id) return retry(422, 'The passkey could not be used. Try again, or sign in with your password.');
    try {
      const { user, tokens } = await mfa.passkeyLogin(fields.challenge_id, credential as never, clientOf(ctx));
      await signedIn(ctx, view, user.id, tokens);
    } catch (error) {
      if (error instanceof Unauthorized || error instanceof InvalidCredentials)
        return retry(401, 'That passkey was not recognised. Try again, or sign in with your password.');
      if (error instanceof SsoRequired) return organizationProviderPage(ctx, view, error);
      if (error instanceof Forbidden) return retry(403, `${error.message}.`);
      await refusal(ctx, error, retry);
    }
  });

  router.get(at('/forgot-password'), async (ctx) => {
    const view = await pending(ctx);
    if (!view) return;
    show(ctx, { status: 200, title: 'Reset your password', body: views.forgotPassword({ base: base(view), csrf: csrfFor(ctx, view) }) });
  });

  router.post(at('/forgot-password'), async (ctx) => {
    const got = await posted(ctx, '/forgot-password', 'forgotPassword');
    if (!got) return;
    const { view, fields } = got;
    const email = (fields.email ?? '').trim();
    if (!email || email.length > 254)
      return show(ctx, {
        status: 422,
        title: 'Reset your password',
        body: views.forgotPassword({ base: base(view), csrf: csrfFor(ctx, view) }),
        notice: errorNotice('Enter your e-mail address.'),
      });
    options.account.forgotPassword(email, clientOf(ctx));
    show(ctx, {
      status: 200,
      title: 'Reset your password',
      body: views.back(base(view)),
      notice: { kind: 'success', text: 'If an account has this e-mail address, a link to choose a new password is on its way to it.' },
    });
  });

  router.get(at('/provider/:slug'), async (ctx) => {
    const view = await pending(ctx);
    if (!view) return;
    stateOf(ctx).operationId = 'authorizeWithProvider';
    const retry = (status: number, text: string) => signInPage(ctx, view, status, errorNotice(text));
    try {
      await options.guard?.(ctx);
      const verifier = randomBytes(32).toString('base64url');
      const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
      const redirectTo = new URL(PROVIDER_RETURN, options.appUrl).href;
      const to = await options.providerSignIn.authorize(String(ctx.params.slug), { redirectTo, codeChallenge }, clientOf(ctx));
      // Lax: the person comes back from the provider's site, a cross-site navigation.
      ctx.cookies.set(PROVIDER_COOKIE, `${view.uid}.${verifier}`, {
        httpOnly: true,
        sameSite: 'lax',
        secure: ctx.secure,
        path: '/oauth2/',
        maxAge: PROVIDER_FLOW_MS,
        overwrite: true,
      });
      ctx.status = 303;
      ctx.redirect(to);
    } catch (error) {
      if (error instanceof NotFound) return retry(404, 'This way to sign in is not available any more. Choose another.');
      await refusal(ctx, error, retry);
    }
  });

  router.get(at('/provider-return'), async (ctx) => {
    const view = await pending(ctx);
    if (!view) return;
    const [uid, verifier] = (ctx.cookies.get(PROVIDER_COOKIE) ?? '').split('.');
    ctx.cookies.set(PROVIDER_COOKIE, null, { path: '/oauth2/' });
    const retry = (status: number, text: string) => signInPage(ctx, view, status, errorNotice(text));
    const { code, error_description: problem } = ctx.query;
    if (typeof problem === 'string') return retry(400, `The sign-in with the provider did not succeed: ${problem}.`);
    if (uid !== view.uid || !verifier || typeof code !== 'string')
      return retry(400, 'The sign-in with the provider could not be completed. Try again.');
    stateOf(ctx).operationId = 'providerToken';
    try {
      await options.guard?.(ctx);
      const { user, tokens } = await options.providerSignIn.exchange(code, verifier, clientOf(ctx));
      await signedIn(ctx, view, user.id, tokens);
    } catch (error) {
      if (error instanceof MfaRequired) return secondStepNeeded(ctx, view, error);
      if (error instanceof EmailVerificationRequired) return addressProofNeeded(ctx, view, error);
      if (error instanceof SsoRequired) return organizationProviderPage(ctx, view, error);
      if (error instanceof InvalidCode) return retry(400, 'The sign-in with the provider could not be completed. Try again.');
      if (error instanceof Forbidden) return retry(403, `${error.message}.`);
      await refusal(ctx, error, retry);
    }
  });

  // A provider that did not vouch for the address: the code mailed to it, asked for on a page of its own.
  const addressProofPage = (ctx: Context, view: InteractionView, status: number, notice?: Notice) =>
    show(
      ctx,
      {
        status,
        title: 'Confirm your e-mail address',
        notice,
        body: views.providerAddressCode({ base: base(view), csrf: csrfFor(ctx, view) }),
      },
      view,
    );
  const addressProofNeeded = (ctx: Context, view: InteractionView, error: EmailVerificationRequired) => {
    ctx.cookies.set(ADDRESS_PROOF_COOKIE, error.verificationToken, {
      httpOnly: true,
      sameSite: 'strict',
      secure: ctx.secure,
      path: base(view),
      overwrite: true,
    });
    addressProofPage(ctx, view, 200, { kind: 'success', text: 'A six-digit code is on its way to your e-mail address.' });
  };

  router.post(at('/provider-verify'), async (ctx) => {
    const got = await posted(ctx, '/provider-verify', 'verifyProviderEmail');
    if (!got) return;
    const { view, fields } = got;
    const token = ctx.cookies.get(ADDRESS_PROOF_COOKIE);
    if (!token)
      return signInPage(ctx, view, 401, errorNotice('This sign-in took too long or was already used. Sign in with the provider again.'));
    const code = (fields.code ?? '').replace(/\s+/g, '');
    const again = (status: number, text: string) => addressProofPage(ctx, view, status, errorNotice(text));
    if (!/^\d{6}$/.test(code)) return again(422, 'Enter the six digits of the code from the e-mail.');
    try {
      const { user, tokens } = await options.providerSignIn.verifyAddress(token, code, clientOf(ctx));
      await signedIn(ctx, view, user.id, tokens);
    } catch (error) {
      if (error instanceof MfaRequired) {
        ctx.cookies.set(ADDRESS_PROOF_COOKIE, null, { path: base(view) });
        return secondStepNeeded(ctx, view, error);
      }
      if (error instanceof SsoRequired) return organizationProviderPage(ctx, view, error);
      if (error instanceof InvalidCode)
        return again(400, 'That code is not right, or it has expired. Check the latest e-mail, or sign in with the provider again.');
      if (error instanceof Forbidden) return signInPage(ctx, view, 403, errorNotice(`${error.message}.`));
      await refusal(ctx, error, again);
    }
  });

  const codePage = (ctx: Context, view: InteractionView, email: string, status: number, notice: Notice) =>
    show(
      ctx,
      { status, title: 'Enter the code', notice, body: views.emailCode({ base: base(view), csrf: csrfFor(ctx, view), email }) },
      view,
    );

  // With EMAIL_CODE_ENABLED off, these pages are not there (404), as the API's operations are not.
  if (options.emailCodes) {
    router.get(at('/email-code'), async (ctx) => {
      const view = await pending(ctx);
      if (!view) return;
      show(
        ctx,
        { status: 200, title: 'Sign in with a code', body: views.askEmailCode({ base: base(view), csrf: csrfFor(ctx, view) }) },
        view,
      );
    });

    router.post(at('/email-code'), async (ctx) => {
      const got = await posted(ctx, '/email-code', 'requestEmailCode');
      if (!got) return;
      const { view, fields } = got;
      const email = (fields.email ?? '').trim();
      if (!email || email.length > 254) {
        const body = views.askEmailCode({ base: base(view), csrf: csrfFor(ctx, view) });
        return show(ctx, { status: 422, title: 'Sign in with a code', body, notice: errorNotice('Enter your e-mail address.') }, view);
      }
      options.emailCode.request(email, undefined, clientOf(ctx));
      codePage(ctx, view, email, 200, {
        kind: 'success',
        text: 'If this address can sign in, a six-digit code is on its way to it. It works once, for a few minutes.',
      });
    });

    router.post(at('/email-code/verify'), async (ctx) => {
      const got = await posted(ctx, '/email-code/verify', 'verifyEmailCode');
      if (!got) return;
      const { view, fields } = got;
      const email = (fields.email ?? '').trim();
      const code = (fields.code ?? '').replace(/\s+/g, '');
      const again = (status: number, text: string) => codePage(ctx, view, email, status, errorNotice(text));
      if (!email || !/^\d{6}$/.test(code)) return again(422, 'Enter the six digits of the code from the e-mail.');
      try {
        const { user, tokens } = await options.emailCode.verify({ email, code }, clientOf(ctx));
        await signedIn(ctx, view, user.id, tokens);
      } catch (error) {
        if (error instanceof MfaRequired) return secondStepNeeded(ctx, view, error);
        if (error instanceof SsoRequired) return organizationProviderPage(ctx, view, error);
        if (error instanceof InvalidCode || error instanceof InvalidToken)
          return again(400, 'That code is not right, or it has expired. Check the latest e-mail, or ask for a new code.');
        if (error instanceof Forbidden) return again(403, `${error.message}.`);
        await refusal(ctx, error, again);
      }
    });
  }

  router.post(at('/consent'), async (ctx) => {
    const got = await posted(ctx, '/consent', undefined);
    if (!got) return;
    const { view, fields } = got;
    if (fields.decision === 'allow') return interactions.finishConsent(ctx, view.scopes);
    await interactions.deny(ctx, 'The person declined to allow access');
  });

  router.post(at('/abort'), async (ctx) => {
    const got = await posted(ctx, '/abort', undefined);
    if (!got) return;
    await interactions.deny(ctx, 'The person cancelled the sign-in');
  });

  return router;
}

/** Why the provider asks again, when it does: said on the page above the form. */
function reasonNotice(view: InteractionView): Notice | undefined {
  if (view.reasons.includes('login_prompt') || view.reasons.includes('max_age'))
    return { kind: 'success', text: `${views.applicationText(view)} asks you to sign in again.` };
  return undefined;
}

/** The consent page of a client no admin made: the service does not vouch for it, and says where the browser goes. */
function unverifiedNotice(view: InteractionView, service: string): Notice {
  const host = views.redirectHost(view);
  return {
    kind: 'error',
    text:
      `This application is not verified by ${service}: it registered itself, and its name is its own claim.` +
      (host === undefined ? '' : ` Allow it only if you trust ${host}, where it sends you next.`),
  };
}

const errorNotice = (text: string): Notice => ({ kind: 'error', text });

function json(ctx: Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body;
}

function parseJson(text: string | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The refusals every form may meet (too many attempts, the service overloaded or its database away); anything else is thrown on. */
async function refusal(ctx: Context, error: unknown, again: (status: number, text: string) => unknown): Promise<void> {
  if (error instanceof RateLimited) {
    ctx.set({ ...error.limits, 'Retry-After': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))) });
    // The settings the API's message names are for whoever runs the service, not for the person signing in.
    const reason = error.message.replace(/\s*\([A-Z_, ]+\)$/, '');
    return void (await again(429, `${reason}. Wait a few minutes before trying again.`));
  }
  if (error instanceof Unavailable) {
    if (error.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(error.retryAfterSeconds));
    return void (await again(503, 'The service cannot do this right now. Try again in a minute.'));
  }
  throw error;
}
