import type { components } from '../../generated/openapi.js';
import {
  Conflict,
  DomainError,
  EmailVerificationRequired,
  Forbidden,
  InvalidCode,
  InvalidCredentials,
  InvalidPasskey,
  InvalidRedirect,
  UnreadableSecret,
  InvalidPassword,
  InvalidToken,
  MfaRequired,
  NotFound,
  BadRequest,
  RateLimited,
  ReauthRequired,
  TokenExpired,
  Unauthorized,
  Unavailable,
  Validation,
  VerificationFailed,
  SsoRequired,
  MfaEnrollmentRequired,
  type FieldProblem,
} from '../errors.js';

export type ErrorCode = components['schemas']['ErrorCode'];
export type FieldError = components['schemas']['FieldError'];

/**
 * The one error type the HTTP layer renders. `message` and `details` go to the client; `cause`
 * is logged and never sent.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldError[],
    options?: { cause?: unknown; headers?: Record<string, string>; logLevel?: 'warn'; fields?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause });
    this.name = 'ApiError';
    this.headers = options?.headers ?? {};
    this.logLevel = options?.logLevel;
    this.fields = options?.fields;
  }

  readonly headers: Record<string, string>;
  /** More members of the error object, for the client (MFA_REQUIRED's `mfa_token` and `methods`). */
  readonly fields: Record<string, unknown> | undefined;
  /** An expected refusal worth a line at this level, without a stack (an overload, say). */
  readonly logLevel: 'warn' | undefined;
}

// The HTTP layer's own refusals. Those the rules share are the domain errors themselves, so that
// each is rendered by `toApiError` alone.
export const badRequest = (message = 'Malformed request body') => new ApiError(400, 'BAD_REQUEST', message);
export const unauthorized = () => new Unauthorized();
export const notFound = (message?: string) => new NotFound(message);
export const validationError = (details: FieldError[]) => new Validation(details);
export const serviceUnavailable = (cause?: unknown) => new Unavailable({ cause });
/** 429 with `Retry-After` in whole seconds (at least 1), plus any rate-limit headers to send. */
export const rateLimited = (retryAfterMs: number, message?: string, headers: Record<string, string> = {}, logLevel?: 'warn') =>
  new RateLimited(retryAfterMs, { message, limits: headers, overload: logLevel === 'warn' });

/** A validation error lists this many problems at most: a body of a thousand bad fields gets a short answer. */
export const MAX_VALIDATION_DETAILS = 20;

const BEARER_CHALLENGE = { 'WWW-Authenticate': 'Bearer' };

/**
 * Anything thrown while answering a request, as the response it becomes: a domain error by its
 * class, an error of the body parser by its status, a lost database as 503, anything else as 500
 * with its cause kept for the log only.
 */
export function toApiError(thrown: unknown): ApiError {
  if (thrown instanceof ApiError) return thrown;
  if (thrown instanceof DomainError) return fromDomain(thrown);
  const status = (thrown as { status?: unknown })?.status;
  const type = (thrown as { type?: unknown })?.type;
  // Errors raised by the body parser (raw-body, co-body) carry an HTTP status and a type.
  if (status === 413 || type === 'entity.too.large') {
    return new ApiError(413, 'PAYLOAD_TOO_LARGE', 'Request body too large', undefined, { cause: thrown });
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new ApiError(400, 'BAD_REQUEST', status === 415 ? 'Unsupported content type' : 'Malformed request body', undefined, {
      cause: thrown,
    });
  }
  if (isDatabaseUnavailable(thrown)) {
    return new ApiError(503, 'SERVICE_UNAVAILABLE', 'Service unavailable', undefined, { cause: thrown });
  }
  return new ApiError(500, 'INTERNAL_ERROR', 'Internal server error', undefined, { cause: thrown });
}

function fromDomain(error: DomainError): ApiError {
  const { message } = error;
  if (error instanceof Validation) return validationFailure(error.details);
  if (error instanceof Unauthorized) return new ApiError(401, 'UNAUTHORIZED', message, undefined, { headers: BEARER_CHALLENGE });
  if (error instanceof InvalidCredentials)
    return new ApiError(401, 'INVALID_CREDENTIALS', message, undefined, { headers: BEARER_CHALLENGE });
  if (error instanceof TokenExpired) {
    return new ApiError(401, 'TOKEN_EXPIRED', message, undefined, {
      headers: { 'WWW-Authenticate': `Bearer error="invalid_token", error_description="${message}"` },
    });
  }
  if (error instanceof InvalidToken) return new ApiError(400, 'INVALID_TOKEN', message);
  if (error instanceof InvalidPassword) return new ApiError(400, 'INVALID_PASSWORD', message);
  if (error instanceof MfaRequired) {
    return new ApiError(403, 'MFA_REQUIRED', message, undefined, { fields: { mfa_token: error.mfaToken, methods: [...error.methods] } });
  }
  if (error instanceof EmailVerificationRequired) {
    return new ApiError(403, 'EMAIL_VERIFICATION_REQUIRED', message, undefined, {
      fields: { verification_token: error.verificationToken },
    });
  }
  if (error instanceof InvalidCode) return new ApiError(400, 'INVALID_CODE', message);
  if (error instanceof InvalidPasskey) return new ApiError(400, 'INVALID_PASSKEY', message);
  if (error instanceof InvalidRedirect) return new ApiError(400, 'INVALID_REDIRECT', message);
  if (error instanceof ReauthRequired) return new ApiError(403, 'REAUTH_REQUIRED', message);
  if (error instanceof VerificationFailed) return new ApiError(400, 'VERIFICATION_FAILED', message);
  if (error instanceof SsoRequired) return new ApiError(403, 'SSO_REQUIRED', message, undefined, { fields: { provider: error.provider } });
  if (error instanceof MfaEnrollmentRequired) return new ApiError(403, 'MFA_ENROLLMENT_REQUIRED', message);
  if (error instanceof Forbidden) return new ApiError(403, 'FORBIDDEN', message);
  if (error instanceof NotFound) return new ApiError(404, 'NOT_FOUND', message, undefined, { cause: error.cause });
  if (error instanceof BadRequest) return new ApiError(400, 'BAD_REQUEST', message);
  if (error instanceof Conflict) return new ApiError(409, 'CONFLICT', message);
  if (error instanceof RateLimited) {
    return new ApiError(429, 'RATE_LIMITED', message, undefined, {
      headers: { ...error.limits, 'Retry-After': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))) },
      logLevel: error.overload ? 'warn' : undefined,
    });
  }
  if (error instanceof UnreadableSecret) {
    return new ApiError(500, 'INTERNAL_ERROR', message, undefined, { cause: new Error(error.detail) });
  }
  if (error instanceof Unavailable) {
    // Saturated: the caller is told when to come back, and the log gets a line rather than a stack.
    if (error.retryAfterSeconds !== undefined) {
      return new ApiError(503, 'SERVICE_UNAVAILABLE', message, undefined, {
        headers: { 'Retry-After': String(error.retryAfterSeconds) },
        logLevel: 'warn',
      });
    }
    return new ApiError(503, 'SERVICE_UNAVAILABLE', message, undefined, { cause: error.cause });
  }
  return new ApiError(500, 'INTERNAL_ERROR', 'Internal server error', undefined, { cause: error });
}

function validationFailure(details: FieldProblem[]): ApiError {
  if (details.length <= MAX_VALIDATION_DETAILS) return new ApiError(422, 'VALIDATION_ERROR', 'Request validation failed', details);
  return new ApiError(
    422,
    'VALIDATION_ERROR',
    `Request validation failed: ${details.length} problems, the first ${MAX_VALIDATION_DETAILS} listed`,
    details.slice(0, MAX_VALIDATION_DETAILS),
  );
}

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03', '53300']);

function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  // "not queryable": a transaction's rollback on a connection the server just closed, which replaces the
  // original error. The last two: a pool already closed, as while the service shuts down.
  return /timeout exceeded when trying to connect|Query read timeout|Connection terminated|is not queryable|driver has already been destroyed|Cannot use a pool after calling end/i.test(
    message,
  );
}
