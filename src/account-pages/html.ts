/** Text for HTML: every character that could open markup or end an attribute is an entity. */
export const escape = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The pages' look, in the colours and type of the API docs (Swagger UI): inline, which the service's
 * Content-Security-Policy allows for styles (`style-src 'self' 'unsafe-inline'`); the pages run no script.
 * The hosted sign-in pages (src/oidc-pages) build on it.
 */
export const STYLE = `body { margin: 0; font-family: sans-serif; color: #3b4151; background: #fafafa; line-height: 1.5; }
header { background: #1b1b1b; color: #fff; padding: 12px 24px; font-weight: bold; }
main { max-width: 28rem; margin: 40px auto; padding: 24px; background: #fff; border: 1px solid #d9d9d9; border-radius: 4px; }
h1 { font-size: 1.5rem; margin-top: 0; }
label { display: block; font-weight: bold; margin-top: 16px; }
input { display: block; box-sizing: border-box; width: 100%; margin-top: 4px; padding: 8px; font-size: 1rem; border: 1px solid #d9d9d9; border-radius: 4px; }
.hint { font-size: 0.875rem; color: #6b6b6b; margin: 4px 0 0; }
button { margin-top: 24px; padding: 10px 20px; font-size: 1rem; font-weight: bold; color: #fff; background: #49cc90; border: 0; border-radius: 4px; cursor: pointer; }
.notice { padding: 12px 16px; border-radius: 4px; border-left: 4px solid; }
.success { background: #e8f6f0; border-color: #49cc90; }
.error { background: #fae7e7; border-color: #f93e3e; }`;

export interface Notice {
  kind: 'success' | 'error';
  /** Plain text: escaped here. */
  text: string;
}

/**
 * A whole page: `title` and `notice` are plain text, `body` is markup already escaped; `look` may
 * replace the style and add a script at the end of the body (its text, unescaped).
 */
export function page(
  service: string,
  title: string,
  body: string,
  notice?: Notice,
  look: { style?: string; script?: string } = {},
): string {
  const shown = notice
    ? `<p class="notice ${notice.kind}" role="${notice.kind === 'error' ? 'alert' : 'status'}">${escape(notice.text)}</p>\n`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escape(title)} – ${escape(service)}</title>
<style>
${look.style ?? STYLE}
</style>
</head>
<body>
<header>${escape(service)}</header>
<main>
<h1>${escape(title)}</h1>
${shown}${body}
</main>
${look.script === undefined ? '' : `<script>\n${look.script}\n</script>\n`}</body>
</html>
`;
}

/** A form posted to `action` with its hidden fields (plain values, escaped here) and `fields` (markup). */
export function form(action: string, hidden: Record<string, string>, fields: string, button: string): string {
  const inputs = Object.entries(hidden)
    .map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`)
    .join('\n');
  return `<form method="post" action="${escape(action)}">
${inputs}
${fields}<button type="submit">${escape(button)}</button>
</form>
`;
}

/** A labelled password field with a hint under it. */
export function passwordField(id: string, label: string, hint: string): string {
  return `<label for="${id}">${escape(label)}</label>
<input id="${id}" name="${id}" type="password" autocomplete="new-password" required minlength="8" aria-describedby="${id}-hint">
<p class="hint" id="${id}-hint">${escape(hint)}</p>
`;
}

export const paragraph = (text: string) => `<p>${escape(text)}</p>\n`;
