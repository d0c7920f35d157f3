import type { ProviderClaims, ProviderSettings } from './provider-repository.js';
import { Validation, type FieldProblem } from '../errors.js';
import { checkResolvesPublic, RefusedAddress, urlProblem as addressProblem } from '../infra/public-addresses.js';
import { OIDC_CLAIMS, OIDC_SCOPES, PRESETS } from './presets.js';

/** A provider as an admin registers it; what is left out comes from the preset of its slug, if any. */
export interface ProviderInput {
  slug: string;
  kind?: 'oidc' | 'oauth2';
  name?: string;
  client_id: string;
  client_secret?: string | null;
  issuer?: string | null;
  authorization_url?: string | null;
  token_url?: string | null;
  userinfo_url?: string | null;
  emails_url?: string | null;
  scopes?: string[];
  claims?: Partial<ProviderClaims>;
  enabled?: boolean;
  allow_signup?: boolean;
  trust_email?: boolean;
}

export const URL_FIELDS = ['issuer', 'authorization_url', 'token_url', 'userinfo_url', 'emails_url'] as const;
/** How long a provider URL's name may take to resolve when it is saved. */
const RESOLVE_TIMEOUT_MS = 5000;
/** Said of every refusal that the setting would lift. */
const ALLOWED_BY_SETTING = 'PROVIDER_ALLOW_PRIVATE_URLS=true allows internal addresses';
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A registration filled from its preset and checked, the secret not yet sealed; 422 naming each
 * field that is missing or wrong.
 */
export function settingsOf(input: ProviderInput, allowPrivateUrls: boolean): Omit<ProviderSettings, 'client_secret_sealed'> {
  const preset = PRESETS[input.slug];
  const kind = input.kind ?? preset?.kind ?? 'oidc';
  const fromPreset = preset?.kind === kind ? preset : undefined;
  const pick = (field: (typeof URL_FIELDS)[number]) => (input[field] === undefined ? (fromPreset?.[field] ?? null) : input[field]);
  const settings = {
    slug: input.slug,
    kind,
    name: input.name ?? fromPreset?.name ?? input.slug,
    client_id: input.client_id,
    issuer: pick('issuer'),
    authorization_url: pick('authorization_url'),
    token_url: pick('token_url'),
    userinfo_url: pick('userinfo_url'),
    emails_url: pick('emails_url'),
    scopes: input.scopes ?? fromPreset?.scopes ?? (kind === 'oidc' ? OIDC_SCOPES : []),
    claims: { ...OIDC_CLAIMS, ...fromPreset?.claims, ...input.claims },
    enabled: input.enabled ?? true,
    allow_signup: input.allow_signup ?? true,
    trust_email: input.trust_email ?? false,
  };
  settings.scopes = withOpenId(kind, settings.scopes);
  check(settings, allowPrivateUrls);
  return settings;
}

/** The scopes, without repeats; an OpenID Connect sign-in always asks for `openid` (without it there is no ID token). */
export function withOpenId(kind: 'oidc' | 'oauth2', scopes: readonly string[]): string[] {
  return [...new Set(kind === 'oidc' ? ['openid', ...scopes] : scopes)];
}

/**
 * Checks a provider's settings as a whole: at registration and after every change. Without
 * `allowPrivateUrls` (PROVIDER_ALLOW_PRIVATE_URLS) every URL is https and names no internal address.
 */
export function check(settings: Omit<ProviderSettings, 'client_secret_sealed'>, allowPrivateUrls: boolean): void {
  const problems: FieldProblem[] = [];
  const required = settings.kind === 'oidc' ? (['issuer'] as const) : (['authorization_url', 'token_url', 'userinfo_url'] as const);
  for (const field of required)
    if (!settings[field]) problems.push({ field: `body.${field}`, message: `is required for kind ${settings.kind}` });
  for (const field of URL_FIELDS) {
    const value = settings[field];
    if (!value) continue;
    const problem =
      urlProblem(value, allowPrivateUrls) ?? (field === 'issuer' && new URL(value).search ? 'may not carry a query' : undefined);
    if (problem) problems.push({ field: `body.${field}`, message: problem });
  }
  if (problems.length > 0) throw new Validation(problems);
}

/**
 * Checks, when private addresses are not allowed, that the names of the URLs given resolve to public
 * addresses only: 422 naming each field that does not. Each fetch checks again, on the address it
 * connects to.
 */
export async function checkAddresses(urls: Partial<Record<(typeof URL_FIELDS)[number], string | null>>, allowPrivateUrls: boolean) {
  if (allowPrivateUrls) return;
  const problems: FieldProblem[] = [];
  for (const field of URL_FIELDS) {
    const value = urls[field];
    // A URL wrong on its face is refused by `check`, with its reason.
    if (!value || urlProblem(value, false) !== undefined) continue;
    try {
      await checkResolvesPublic(value, RESOLVE_TIMEOUT_MS);
    } catch (error) {
      if (!(error instanceof RefusedAddress)) throw error;
      problems.push({ field: `body.${field}`, message: error.internal ? `${error.message}; ${ALLOWED_BY_SETTING}` : error.message });
    }
  }
  if (problems.length > 0) throw new Validation(problems);
}

function urlProblem(text: string, allowPrivateUrls: boolean): string | undefined {
  const problem = urlShapeProblem(text);
  if (problem !== undefined || allowPrivateUrls) return problem;
  // What the setting would have let through is refused with its name: a provider on the same network is a common first test.
  const internal = addressProblem(text, false);
  return internal && `${internal}; ${ALLOWED_BY_SETTING}`;
}

function urlShapeProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.username || url.password) return 'may not carry a user name or password';
  if (url.hash) return 'may not carry a fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return undefined;
  return 'must be https (http only on a loopback host)';
}
