import type Koa from 'koa';

/** The pages oidc-provider renders itself: the logout question, its success and an error. */
export interface ProviderPages {
  logoutSource(ctx: Koa.Context, form: string): Promise<void>;
  postLogoutSuccessSource(ctx: Koa.Context): Promise<void>;
  renderError(ctx: Koa.Context, out: Record<string, string>, error: unknown): Promise<void>;
}

const escape = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(ctx: Koa.Context, brand: string, title: string, body: string): void {
  ctx.type = 'html';
  ctx.body = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)} - ${escape(brand)}</title></head>
<body><main><h1>${escape(title)}</h1>${body}</main></body>
</html>`;
}

/** Plain pages without script or style, used until hosted ones are given. */
export function plainPages(brand: string): ProviderPages {
  return {
    async logoutSource(ctx, form) {
      page(
        ctx,
        brand,
        'Sign out',
        `<p>Do you want to sign out of ${escape(brand)}?</p>${form}` +
          '<button type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button> ' +
          '<button type="submit" form="op.logoutForm">No, stay signed in</button>',
      );
    },
    async postLogoutSuccessSource(ctx) {
      page(ctx, brand, 'Signed out', '<p>You are signed out.</p>');
    },
    async renderError(ctx, out) {
      const lines = Object.entries(out)
        .map(([key, value]) => `<p><strong>${escape(key)}</strong>: ${escape(String(value))}</p>`)
        .join('');
      page(ctx, brand, 'Something went wrong', lines);
    },
  };
}
