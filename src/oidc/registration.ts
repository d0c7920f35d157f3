import { MAX_REDIRECT_URI_LENGTH, redirectListProblems, redirectProblem } from './clients.js';

/**
 * The client metadata that says a client registered itself (RFC 7591) rather than being made by an
 * admin. The service sets it, from `oauth_clients.registered`; whatever a client sends is overwritten.
 */
export const SELF_REGISTERED = 'self_registered';

/** Where people are sent: the admin API's redirect rules, count limit included. */
const REDIRECT_FIELDS = new Set(['redirect_uris', 'post_logout_redirect_uris']);
/** Addresses shown to people or opened by their browsers: each obeys the redirect rules too. */
const LINK_FIELDS = new Set(['client_uri', 'logo_uri', 'policy_uri', 'tos_uri', 'initiate_login_uri']);
/** Addresses the service itself would fetch or call (keys, a sector's redirect list, logout tokens): never taken from a client that registered itself. */
const FETCHED_FIELDS = new Set(['jwks_uri', 'sector_identifier_uri', 'backchannel_logout_uri']);

/** As an admin's client name: at most this long, and no control or direction-changing characters that would disguise it. */
const MAX_NAME_LENGTH = 200;
// eslint-disable-next-line no-control-regex -- control characters are what this finds
const DISGUISING = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/**
 * The metadata oidc-provider hands to `registrationValidator`, one call per name, in this order
 * (`extraClientMetadata.properties`): the mark first, so that the checks after it know whose client it is.
 */
export const CHECKED_METADATA = [SELF_REGISTERED, 'client_name', ...REDIRECT_FIELDS, ...LINK_FIELDS, ...FETCHED_FIELDS];

type Refusal = new (description: string) => Error;

/**
 * oidc-provider's `extraClientMetadata.validator`: marks a client that registers itself, and holds
 * such a client to the rules of the admin API, when it registers and each time it is loaded. A
 * refusal is the library's InvalidClientMetadata, which answers `invalid_redirect_uri` for a
 * description that starts with `redirect_uris` and `invalid_client_metadata` for any other (RFC 7591).
 */
export function registrationValidator(InvalidClientMetadata: Refusal) {
  return (ctx: { oidc?: { route?: string } } | undefined, key: string, value: unknown, metadata: Record<string, unknown>): void => {
    if (key === SELF_REGISTERED) {
      metadata[SELF_REGISTERED] = ctx?.oidc?.route === 'registration' || value === true;
      return;
    }
    if (metadata[SELF_REGISTERED] !== true || value === undefined) return;
    const refuse = (message: string) => {
      throw new InvalidClientMetadata(`${key} ${message}`);
    };
    if (key === 'client_name') {
      if (typeof value === 'string' && value.length > MAX_NAME_LENGTH) refuse(`may be at most ${MAX_NAME_LENGTH} characters long`);
      if (typeof value === 'string' && DISGUISING.test(value)) refuse('may not hold control or text-direction characters');
    } else if (REDIRECT_FIELDS.has(key)) {
      // Anything but a list is the library's to refuse.
      const [problem] = Array.isArray(value) ? redirectListProblems(value) : [];
      if (problem) {
        throw new InvalidClientMetadata(`${key}${problem.index === undefined ? '' : `.${problem.index}`} ${problem.message}`);
      }
    } else if (LINK_FIELDS.has(key) && typeof value === 'string') {
      const problem =
        value.length > MAX_REDIRECT_URI_LENGTH ? `may be at most ${MAX_REDIRECT_URI_LENGTH} characters long` : redirectProblem(value);
      if (problem) refuse(problem);
    } else if (FETCHED_FIELDS.has(key)) {
      refuse('is not accepted from a client that registers itself: the service fetches no address a client names');
    }
  };
}
