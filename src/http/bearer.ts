const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token of an `Authorization: Bearer <token>` header (the scheme in any case); undefined for anything else. */
export function bearerToken(header: string): string | undefined {
  return BEARER.exec(header)?.[1];
}
