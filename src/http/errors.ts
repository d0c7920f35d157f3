import type { components } from '../../generated/openapi';

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

export const badRequest = (message = 'Malformed request body') => new ApiError(400, 'BAD_REQUEST', message);
export const unauthorized = () =>
  new ApiError(401, 'UNAUTHORIZED', 'Not authenticated', undefined, { headers: { 'WWW-Authenticate': 'Bearer' } });
export const tokenExpired = () =>
  new ApiError(401, 'TOKEN_EXPIRED', 'Token has expired', undefined, {
    headers: { 'WWW-Authenticate': 'Bearer error="invalid_token", error_description="Token has expired"' },
  });
export const invalidCredentials = () =>
  new ApiError(401, 'INVALID_CREDENTIALS', 'Invalid email or password', undefined, {
    headers: { 'WWW-Authenticate': 'Bearer' },
  });
export const forbidden = (message = 'Not allowed') => new ApiError(403, 'FORBIDDEN', message);
export const notFound = (message = 'Not found') => new ApiError(404, 'NOT_FOUND', message);
export const conflict = (message: string) => new ApiError(409, 'CONFLICT', message);
/** A validation error lists this many problems at most: a body of a thousand bad fields gets a short answer. */
export const MAX_VALIDATION_DETAILS = 20;
export const validationError = (details: FieldError[]) =>
  details.length > MAX_VALIDATION_DETAILS
    ? new ApiError(
        422,
        'VALIDATION_ERROR',
        `Request validation failed: ${details.length} problems, the first ${MAX_VALIDATION_DETAILS} listed`,
        details.slice(0, MAX_VALIDATION_DETAILS),
      )
    : new ApiError(422, 'VALIDATION_ERROR', 'Request validation failed', details);
export const serviceUnavailable = (cause?: unknown) =>
  new ApiError(503, 'SERVICE_UNAVAILABLE', 'Service unavailable', undefined, { cause });
export const invalidToken = () => new ApiError(400, 'INVALID_TOKEN', 'Invalid or expired token');
export const invalidPassword = () => new ApiError(400, 'INVALID_PASSWORD', 'Current password is incorrect');
/** The right password of a user with a second factor: the login goes on at POST /api/auth/mfa/verify. */
export const mfaRequired = (mfaToken: string, methods: string[]) =>
  new ApiError(403, 'MFA_REQUIRED', 'A second factor is required', undefined, { fields: { mfa_token: mfaToken, methods } });
export const invalidCode = () => new ApiError(400, 'INVALID_CODE', 'Invalid or already used code');
export const invalidPasskey = (message = 'Passkey not accepted') => new ApiError(400, 'INVALID_PASSKEY', message);
/** 429 with `Retry-After` in whole seconds (at least 1), plus any rate-limit headers to send. */
export const rateLimited = (retryAfterMs: number, message = 'Too many requests', headers: Record<string, string> = {}, logLevel?: 'warn') =>
  new ApiError(429, 'RATE_LIMITED', message, undefined, {
    headers: { ...headers, 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
    logLevel,
  });
