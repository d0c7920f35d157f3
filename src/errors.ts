/**
 * What the rules refuse, in their own words. Nothing here knows HTTP: the edge (`http/errors.ts`)
 * turns each class into a status, an error code and headers. `message` is shown to the client, so it
 * never holds an internal detail; `cause` is only logged.
 */
export abstract class DomainError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A problem with one field of the request, named as the contract names it (`body.email`). */
export interface FieldProblem {
  field: string;
  message: string;
}

/** The input breaks a rule beyond the contract's schema (a common password, a bad date range). */
export class Validation extends DomainError {
  constructor(readonly details: FieldProblem[]) {
    super('Request validation failed');
  }
}

/** No credentials, or ones that do not (or no longer) identify anyone. */
export class Unauthorized extends DomainError {
  constructor() {
    super('Not authenticated');
  }
}

/** A sign-in with a wrong e-mail or password (never says which), or with a passkey not recognised. */
export class InvalidCredentials extends DomainError {
  constructor(message = 'Invalid email or password') {
    super(message);
  }
}

/**
 * The right password of a user with a second factor: the sign-in goes on with a proof of that
 * factor and `mfaToken`, a single-use token for this step, by one of `methods`.
 */
export class MfaRequired extends DomainError {
  constructor(
    readonly mfaToken: string,
    readonly methods: readonly string[],
  ) {
    super('A second factor is required');
  }
}

/**
 * A provider sign-in whose provider did not vouch for the address: a code was mailed to it, and
 * the sign-in goes on with that code and `verificationToken`.
 */
export class EmailVerificationRequired extends DomainError {
  constructor(readonly verificationToken: string) {
    super('A code was sent to the e-mail address; enter it to finish signing in');
  }
}

/** An address to send a person back to that AUTH_REDIRECT_URLS does not allow: shown, never followed. */
export class InvalidRedirect extends DomainError {
  constructor(message = 'The redirect address is not on the allow-list (AUTH_REDIRECT_URLS)') {
    super(message);
  }
}

/**
 * A secret the service keeps sealed under SECRET_KEY that no longer opens: SECRET_KEY changed since it
 * was sealed, or the stored value was altered. `what` names it for the operator's log.
 */
export class UnreadableSecret extends DomainError {
  /** What the operator's log says. */
  readonly detail: string;

  constructor(what: string) {
    super(
      'A secret kept by the service cannot be opened with its current SECRET_KEY; an administrator must restore the key it was sealed with',
    );
    this.detail = `${what} does not open with SECRET_KEY: it was sealed under another key (SECRET_KEY changed) or altered`;
  }
}

/** A TOTP or recovery code that is wrong, or already used. */
export class InvalidCode extends DomainError {
  constructor() {
    super('Invalid or already used code');
  }
}

/** A passkey's answer that is not accepted: an unknown, used or expired challenge, or a failed check. */
export class InvalidPasskey extends DomainError {
  constructor(message = 'Passkey not accepted') {
    super(message);
  }
}

/** A token that would be valid but for its age. */
export class TokenExpired extends DomainError {
  constructor() {
    super('Token has expired');
  }
}

/** A reset or verification token that is unknown, used or expired. */
export class InvalidToken extends DomainError {
  constructor() {
    super('Invalid or expired token');
  }
}

/** The current password a user gave to change their own credentials is wrong. */
export class InvalidPassword extends DomainError {
  constructor() {
    super('Current password is incorrect');
  }
}

/**
 * An operation that adds a way to sign in, asked without the current password by a session whose
 * last authentication is older than REAUTH_MAX_AGE_MINUTES.
 */
export class ReauthRequired extends DomainError {
  constructor() {
    super('This adds a way to sign in: confirm your password (current_password) or re-authenticate (POST /api/auth/reauthenticate) first');
  }
}

export class Forbidden extends DomainError {
  constructor(message = 'Not allowed') {
    super(message);
  }
}

export class NotFound extends DomainError {
  constructor(message = 'Not found', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A request that cannot be acted on as it stands (a sign-in request of another window, say). */
export class BadRequest extends DomainError {}

export class Conflict extends DomainError {}

/** Too many attempts: the caller may try again after `retryAfterMs`. */
export class RateLimited extends DomainError {
  readonly retryAfterMs: number;
  /** Counters to show the caller (`RateLimit-Remaining`...). */
  readonly limits: Record<string, string>;
  /** The service itself is saturated, rather than one caller over its budget: worth a warning. */
  readonly overload: boolean;

  constructor(retryAfterMs: number, options: { message?: string; limits?: Record<string, string>; overload?: boolean } = {}) {
    super(options.message ?? 'Too many requests');
    this.retryAfterMs = retryAfterMs;
    this.limits = options.limits ?? {};
    this.overload = options.overload ?? false;
  }
}

/**
 * The service cannot answer now: a dependency failed (`cause`), or it is saturated and says when to
 * come back (`retryAfterSeconds`, an overload worth a warning rather than an error).
 */
export class Unavailable extends DomainError {
  readonly retryAfterSeconds: number | undefined;

  constructor(options: { message?: string; cause?: unknown; retryAfterSeconds?: number } = {}) {
    super(options.message ?? 'Service unavailable', { cause: options.cause });
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** A domain whose DNS TXT record is missing, or does not hold the token the service gave. */
export class VerificationFailed extends DomainError {}

/**
 * A person whose organisation signs them in through its own identity provider, trying another way:
 * `provider` is that provider's slug.
 */
export class SsoRequired extends DomainError {
  constructor(readonly provider: string) {
    super(`Your organization signs you in through its identity provider: sign in with ${provider}`);
  }
}

/** An organisation that requires a second factor, asked for by a member who has none. */
export class MfaEnrollmentRequired extends DomainError {
  constructor() {
    super('This organization requires a second factor: enrol one (TOTP or a passkey) first');
  }
}
