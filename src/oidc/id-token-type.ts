import { sign, type KeyObject } from 'node:crypto';

/** The JWT header `typ` of ID tokens: the contract keeps every kind of token apart by its type. */
export const ID_TOKEN_TYP = 'JWT';

interface SigningKey {
  kid: string;
  key: KeyObject;
  algorithm: string;
}

/**
 * oidc-provider signs ID tokens without a `typ` header and has no setting for one: each signed ID
 * token is signed again, with the same key and claims, under a header that says `typ: JWT` (RFC 7519
 * §5.1), as the API's tokens say `access+jwt`, resource tokens `at+jwt` and logout tokens `logout+jwt`.
 * Anything else the library issues (logout tokens, encrypted tokens) is left as it is.
 */
export function typedIdTokens(
  IdToken: { prototype: { issue: (this: unknown, options: { use: string }) => Promise<string> } },
  keys: SigningKey[],
): void {
  const issue = IdToken.prototype.issue;
  Object.defineProperty(IdToken.prototype, 'issue', {
    async value(this: unknown, options: { use: string }) {
      const token = await issue.call(this, options);
      return options.use === 'idtoken' ? withType(token, keys) : token;
    },
  });
}

function withType(token: string, keys: SigningKey[]): string {
  const parts = token.split('.');
  if (parts.length !== 3) return token;
  const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as { alg?: string; kid?: string; typ?: string };
  if (header.typ !== undefined) return token;
  const signing = keys.find((key) => key.kid === header.kid && key.algorithm === header.alg);
  if (!signing || (header.alg !== 'RS256' && header.alg !== 'ES256')) return token;
  const input = `${Buffer.from(JSON.stringify({ ...header, typ: ID_TOKEN_TYP })).toString('base64url')}.${parts[1]}`;
  const signature = sign(
    'sha256',
    Buffer.from(input),
    header.alg === 'ES256' ? { key: signing.key, dsaEncoding: 'ieee-p1363' } : signing.key,
  );
  return `${input}.${signature.toString('base64url')}`;
}
