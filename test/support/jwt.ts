import jwt from 'jsonwebtoken';

/** The claims of a token the service issued. */
export type Claims = Record<string, unknown> & { sub: string; sid: string; jti: string; type: string; iat: number; exp: number };

/** The claims of a token, decoded without checking its signature. */
export const claimsOf = (token: string) => jwt.decode(token) as Claims;
