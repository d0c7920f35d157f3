import type Koa from 'koa';
import type { OauthClientCache } from './client-cache.js';
import { BadRequest, NotFound } from '../errors.js';
import type { Interaction, Provider } from './library.js';

export interface InteractionView {
  uid: string;
  /** What the page must ask for now. */
  prompt: 'login' | 'consent';
  /** oidc-provider's prompt reasons (e.g. 'max_age', 'login_prompt'). */
  reasons: string[];
  /** `registered`: the client registered itself (RFC 7591); no admin made it, and its name is its own claim. */
  client: { clientId: string; name: string; firstParty: boolean; registered: boolean };
  /** The requested scopes; for consent, those not yet allowed. */
  scopes: string[];
  loginHint?: string;
  /** Set when a person is already signed in (consent prompt). */
  userId?: string;
  /** Where the page's forms post (the interaction's own URL). */
  returnTo: string;
  /** The application's redirect_uri, where the browser goes once the interaction is over. */
  redirectUri?: string;
}

export interface OidcInteractions {
  /** The pending interaction for this browser; throws NotFound or BadRequest, which the pages render when unknown or expired. */
  details(ctx: Koa.Context): Promise<InteractionView>;
  /**
   * A person proved who they are (password + second factor if any, or passkey, or provider). sessionId is the
   * service session the page opened (listed by GET /api/auth/sessions); the provider session is tied to it.
   */
  finishLogin(ctx: Koa.Context, result: { userId: string; sessionId: string; amr: string[]; acr: string }): Promise<void>;
  /** Consent given for these scopes (for first-party clients the core grants without asking). */
  finishConsent(ctx: Koa.Context, scopes: string[]): Promise<void>;
  /** The person refused or cancelled: the client receives error=access_denied. */
  deny(ctx: Koa.Context, description?: string): Promise<void>;
}

const PROMPTS = new Set(['login', 'consent']);

const scopesOf = (value: unknown): string[] => (typeof value === 'string' ? value.split(' ').filter((s) => s !== '') : []);

/** The hosted pages' side of oidc-provider's interactions, over interactionDetails and interactionResult. */
export function databaseInteractions(
  instance: () => Promise<Provider>,
  clients: OauthClientCache,
  builtIn: ReadonlyMap<string, { name: string }> = new Map(),
): OidcInteractions {
  const load = async (ctx: Koa.Context): Promise<Interaction> => {
    const provider = await instance();
    let interaction: Interaction;
    try {
      interaction = await provider.interactionDetails(ctx.req, ctx.res);
    } catch (error) {
      throw new NotFound('This sign-in request is unknown or has expired; start again from the application', { cause: error });
    }
    // The interaction cookie belongs to the interaction named in the URL, or the request is another browser's.
    const uid = typeof ctx.params === 'object' && ctx.params !== null ? (ctx.params as Record<string, unknown>).uid : undefined;
    if (typeof uid === 'string' && uid !== interaction.uid) {
      throw new BadRequest('This sign-in request belongs to another window; start again from the application');
    }
    return interaction;
  };

  /** Answers the browser with a redirect back to the authorization endpoint, which takes the result. */
  const finish = async (ctx: Koa.Context, result: Record<string, unknown>, merge: boolean): Promise<void> => {
    await load(ctx);
    const provider = await instance();
    const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: merge });
    ctx.redirect(returnTo);
    ctx.status = 303;
  };

  return {
    async details(ctx) {
      const interaction = await load(ctx);
      const name = interaction.prompt.name;
      if (!PROMPTS.has(name)) throw new BadRequest(`This sign-in request asks for ${name}, which these pages do not offer`);
      const clientId = String(interaction.params.client_id);
      const known = builtIn.get(clientId);
      const client = known ? { name: known.name, first_party: true, registered: false } : await clients.find(clientId);
      const requested = scopesOf(interaction.params.scope);
      // The scopes the person has not allowed yet: OpenID ones, and those of the APIs the request names.
      const missingForApis = Object.values(
        (interaction.prompt.details.missingResourceScopes as Record<string, string[]> | undefined) ?? {},
      );
      const missing = [
        ...new Set([
          ...scopesOf((interaction.prompt.details.missingOIDCScope as string[] | undefined)?.join(' ')),
          ...missingForApis.flat(),
        ]),
      ];
      const loginHint = interaction.params.login_hint;
      return {
        uid: interaction.uid,
        prompt: name as 'login' | 'consent',
        reasons: [...interaction.prompt.reasons],
        client: {
          clientId,
          name: client?.name ?? clientId,
          firstParty: client?.first_party === true,
          registered: client?.registered !== false,
        },
        scopes: name === 'consent' && missing.length > 0 ? missing : requested,
        ...(typeof loginHint === 'string' && loginHint !== '' ? { loginHint } : {}),
        ...(interaction.session?.accountId ? { userId: interaction.session.accountId } : {}),
        returnTo: `/oauth2/interaction/${interaction.uid}`,
        ...(typeof interaction.params.redirect_uri === 'string' ? { redirectUri: interaction.params.redirect_uri } : {}),
      };
    },

    async finishLogin(ctx, result) {
      await finish(
        ctx,
        {
          login: {
            accountId: result.userId,
            amr: result.amr,
            acr: result.acr,
            remember: true,
            serviceSessionId: result.sessionId,
          },
        },
        false,
      );
    },

    async finishConsent(ctx, scopes) {
      const interaction = await load(ctx);
      const accountId = interaction.session?.accountId;
      if (!accountId) throw new BadRequest('Sign in before allowing an application');
      const clientId = String(interaction.params.client_id);
      const provider = await instance();
      const existing = interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined;
      const grant = existing ?? new provider.Grant({ accountId, clientId });
      const details = interaction.prompt.details;
      const allowed = new Set(scopes);
      grant.addOIDCScope(
        scopesOf(interaction.params.scope)
          .filter((scope) => allowed.has(scope))
          .join(' '),
      );
      const claims = details.missingOIDCClaims as string[] | undefined;
      if (claims && claims.length > 0) grant.addOIDCClaims(claims);
      const resources = details.missingResourceScopes as Record<string, string[]> | undefined;
      for (const [resource, resourceScopes] of Object.entries(resources ?? {}))
        grant.addResourceScope(resource, resourceScopes.filter((scope) => allowed.has(scope)).join(' '));
      const grantId = await grant.save();
      await finish(ctx, { consent: { grantId } }, true);
    },

    async deny(ctx, description) {
      await finish(ctx, { error: 'access_denied', error_description: description ?? 'The person declined the request' }, false);
    },
  };
}
