/**
 * The addresses a browser flow may send a person back to (AUTH_REDIRECT_URLS). An entry is an exact
 * URL, or an origin followed by `/*` for any path under it. Anything else is refused, never followed.
 */
export type RedirectRule = { readonly kind: 'exact'; readonly href: string } | { readonly kind: 'origin'; readonly origin: string };

export interface RedirectConfig {
  readonly allowed: readonly RedirectRule[];
}

/** One AUTH_REDIRECT_URLS entry as a rule, or a reason it is not one. */
export function parseRedirectRule(entry: string): RedirectRule | string {
  const wildcard = entry.endsWith('/*');
  const url = parseUrl(wildcard ? entry.slice(0, -2) : entry);
  if (!url) return `"${entry}" is not an absolute URL`;
  if (url.username || url.password) return `"${entry}" may not carry a user name or password`;
  if (url.hash) return `"${entry}" may not carry a fragment`;
  if (!wildcard) return { kind: 'exact', href: url.href };
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `"${entry}": only an http(s) origin may end in /*`;
  if (url.pathname !== '/' || url.search) return `"${entry}": /* may only follow an origin (scheme, host and port)`;
  return { kind: 'origin', origin: url.origin };
}

/**
 * The address, normalised, when a rule allows it; otherwise undefined. The URL parser decides what
 * the host is (a browser reads `https://app.example@evil.test` as evil.test), and an address with a
 * user name, a password or a fragment is never allowed.
 */
export function allowedRedirect(config: RedirectConfig, candidate: string): URL | undefined {
  const url = parseUrl(candidate);
  if (!url || url.username || url.password || url.hash) return undefined;
  const allowed = config.allowed.some((rule) =>
    rule.kind === 'exact' ? rule.href === url.href : (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === rule.origin,
  );
  return allowed ? url : undefined;
}

function parseUrl(text: string): URL | undefined {
  // A backslash or a control character reads differently in other parsers: such an address is refused whole.
  for (const char of text) if (char === '\\' || char <= ' ' || char === '\u007f' || /\s/u.test(char)) return undefined;
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}
