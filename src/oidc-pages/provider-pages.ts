import type { Context } from 'koa';
import { SELF_REGISTERED } from '../oidc/registration.js';
import { escape, paragraph, show } from './layout.js';

const upperFirst = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** What oidc-provider's context carries that these pages read. */
interface ProviderContext extends Context {
  oidc?: {
    client?: { clientId?: string; clientName?: string; metadata?(): Record<string, unknown> };
    params?: Record<string, unknown>;
    session?: { accountId?: string };
  };
}

/** The pages oidc-provider renders itself, in the look and under the policy of the hosted pages. */
export interface ProviderPages {
  /** `features.rpInitiatedLogout.logoutSource`: asks before signing out; `form` is the provider's own form (its xsrf value). */
  logoutSource: (ctx: Context, form: string) => Promise<void>;
  /** `features.rpInitiatedLogout.postLogoutSuccessSource`: signed out, and no application to go back to. */
  postLogoutSuccessSource: (ctx: Context) => Promise<void>;
  /** `renderError`: a request the provider refuses and cannot send back to the application. */
  renderError: (ctx: Context, out: Record<string, unknown>, error: unknown) => Promise<void>;
}

const DEFAULT_SERVICE = 'Account Service';

/** The provider's pages naming the product `service` (BRAND_NAME). */
export function providerPages(service: string): ProviderPages {
  // A client that registered itself is named by its own claim, quoted, never as the service's wording.
  const applicationOf = (ctx: ProviderContext) => {
    const client = ctx.oidc?.client;
    const name = client?.clientName ?? client?.clientId;
    return name !== undefined && client?.metadata?.()[SELF_REGISTERED] === true ? `the application that calls itself “${name}”` : name;
  };
  return {
    async logoutSource(ctx: ProviderContext, form: string) {
      const application = applicationOf(ctx);
      const back = ctx.oidc?.params?.post_logout_redirect_uri;
      if (!ctx.oidc?.session?.accountId) {
        // Signed out already: the person only says whether to go on to the application's address.
        const url = typeof back === 'string' ? URL.parse(back) : null;
        const host = url === null ? undefined : url.host !== '' ? url.host : url.protocol;
        return show(ctx, service, {
          status: 200,
          title: 'Signed out',
          body:
            paragraph(`${upperFirst(application ?? 'The application')} asks to send you on to ${host ?? 'its own page'}.`) +
            `${form}
<div class="actions">
<button type="submit" form="op.logoutForm" name="logout" value="yes">Continue to ${escape(host ?? 'the application')}</button>
</div>
`,
          notice: { kind: 'success', text: `You are signed out of ${service}.` },
          formTargets: typeof back === 'string' ? [back] : [],
        });
      }
      show(ctx, service, {
        status: 200,
        title: 'Sign out',
        body:
          paragraph(`Do you want to sign out of ${service}${application ? `, which you used with ${application}` : ''}?`) +
          // The provider's form (its own xsrf value) holds no button: these submit it, as the provider expects.
          `${form}
<div class="actions">
<button type="submit" form="op.logoutForm" name="logout" value="yes">Yes, sign me out</button>
<button type="submit" form="op.logoutForm" class="secondary">No, stay signed in</button>
</div>
`,
        formTargets: typeof back === 'string' ? [back] : [],
      });
    },
    async postLogoutSuccessSource(ctx: ProviderContext) {
      const application = applicationOf(ctx);
      show(ctx, service, {
        status: 200,
        title: 'Signed out',
        body: paragraph(application ? `You can close this page, or go back to ${application}.` : 'You can close this page.'),
        notice: { kind: 'success', text: `You are signed out of ${service}.` },
      });
    },
    async renderError(ctx: Context, out: Record<string, unknown>) {
      const code = typeof out.error === 'string' ? out.error : 'server_error';
      const description = typeof out.error_description === 'string' ? out.error_description : 'The request could not be completed.';
      show(ctx, service, {
        status: ctx.status >= 400 ? ctx.status : 400,
        title: 'Something went wrong',
        body:
          paragraph('The application sent you here with a request that cannot be completed. Go back to it and try again.') +
          `<p class="hint">Error: <code>${escape(code)}</code></p>\n`,
        notice: { kind: 'error', text: description },
      });
    },
  };
}

const defaults = providerPages(DEFAULT_SERVICE);
/** The provider's pages with the default product name; providerPages(BRAND_NAME) names another. */
export const { logoutSource, postLogoutSuccessSource, renderError } = defaults;
