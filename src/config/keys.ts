import { createHash, createPrivateKey, createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
/** The algorithms whose tokens anyone holding the public key can verify. */
export type AsymmetricAlgorithm = 'RS256' | 'ES256';
export type Algorithm = 'HS256' | 'HS384' | 'HS512' | AsymmetricAlgorithm;

/** A public key as published in the JWK Set (RFC 7517), never with private members. */
export type PublicJwk =
  | { kid: string; kty: 'RSA'; alg: 'RS256'; use: 'sig'; n: string; e: string }
  | { kid: string; kty: 'EC'; alg: 'ES256'; use: 'sig'; crv: 'P-256'; x: string; y: string };

export class KeyError extends Error {}

const MIN_RSA_BITS = 2048;
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

/** Env files often hold a PEM on one line with literal `\n` escapes; both spellings are accepted. */
function unescapePem(text: string): string {
  return text.replace(/\\r/g, '').replace(/\\n/g, '\n').trim();
}

function describeKey(key: KeyObject): string {
  const details = key.asymmetricKeyDetails;
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return `an RSA key of ${details?.modulusLength} bits`;
    case 'ec':
      return `an EC key on ${details?.namedCurve}`;
    default:
      return `an ${key.asymmetricKeyType} key`;
  }
}

/** The algorithm a public or private key signs with here, or why it cannot be used. */
export function algorithmOf(key: KeyObject): AsymmetricAlgorithm {
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType === 'rsa') {
    if ((details?.modulusLength ?? 0) < MIN_RSA_BITS)
      throw new KeyError(`is ${describeKey(key)}; RS256 needs at least ${MIN_RSA_BITS} bits`);
    return 'RS256';
  }
  if (key.asymmetricKeyType === 'ec') {
    if (details?.namedCurve !== 'prime256v1') throw new KeyError(`is ${describeKey(key)}; ES256 needs the curve P-256 (prime256v1)`);
    return 'ES256';
  }
  throw new KeyError(`is ${describeKey(key)}; use an RSA key (RS256) or an EC key on P-256 (ES256)`);
}

/** The signing key for `algorithm`, parsed once from PEM; throws a KeyError that says what is wrong. */
export function parsePrivateKey(text: string, algorithm: AsymmetricAlgorithm): KeyObject {
  const key = parseSigningKey(text);
  const keyAlgorithm = algorithmOf(key);
  if (keyAlgorithm !== algorithm) throw new KeyError(`is ${describeKey(key)}, which signs ${keyAlgorithm}, but ALGORITHM is ${algorithm}`);
  return key;
}

/** A private key that signs RS256 or ES256 (its own choice), parsed once from PEM; throws a KeyError that says what is wrong. */
export function parseSigningKey(text: string): KeyObject {
  const pem = unescapePem(text);
  if (!pem.startsWith('-----BEGIN ') || !/PRIVATE KEY-----/.test(pem)) {
    throw new KeyError('is not a PEM private key (-----BEGIN PRIVATE KEY----- ...)');
  }
  // PKCS#8 says so in its label, the older OpenSSL formats in a Proc-Type header.
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem)) {
    throw new KeyError('is encrypted; give the key without a passphrase');
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new KeyError('could not be read as a PEM private key');
  }
  algorithmOf(key);
  return key;
}

/** Every public key in a text of concatenated PEM blocks; throws a KeyError naming the bad one. */
export function parsePublicKeys(text: string): KeyObject[] {
  const pem = unescapePem(text);
  const blocks = [...pem.matchAll(PEM_BLOCK)];
  // Left-over text is most likely a block cut short by the env file; better refused than ignored.
  if (blocks.length === 0 || pem.replace(PEM_BLOCK, '').trim() !== '') {
    throw new KeyError('must hold one or more PEM public keys (-----BEGIN PUBLIC KEY----- ... -----END PUBLIC KEY-----)');
  }
  return blocks.map(([block, label], index) => {
    const which = `key ${index + 1}`;
    // Retired private keys have no business in the environment any more.
    if (label.includes('PRIVATE')) throw new KeyError(`${which} is a private key; list public keys only`);
    let key: KeyObject;
    try {
      key = createPublicKey(block);
    } catch {
      throw new KeyError(`${which} could not be read as a PEM public key`);
    }
    try {
      algorithmOf(key);
    } catch (error) {
      throw new KeyError(`${which} ${(error as Error).message}`);
    }
    return key;
  });
}

/** RFC 7638: SHA-256 of the required members, in lexicographic order, base64url. */
export function jwkThumbprint(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: 'jwk' });
  const members = jwk.kty === 'RSA' ? { e: jwk.e, kty: jwk.kty, n: jwk.n } : { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

/** The JWK of a public key with the members verifiers need to pick and use it. */
export function publicJwk(publicKey: KeyObject): PublicJwk {
  const kid = jwkThumbprint(publicKey);
  const jwk = publicKey.export({ format: 'jwk' });
  return algorithmOf(publicKey) === 'RS256'
    ? { kid, kty: 'RSA', alg: 'RS256', use: 'sig', n: jwk.n!, e: jwk.e! }
    : { kid, kty: 'EC', alg: 'ES256', use: 'sig', crv: 'P-256', x: jwk.x!, y: jwk.y! };
}

interface Verifier {
  key: KeyObject;
  algorithm: Algorithm;
}

/** The keys tokens are signed and verified with, built once when the configuration is loaded. */
export interface KeyRing {
  readonly signing: Verifier & { kid?: string };
  /** The key a token may be verified with, chosen by its `kid`; undefined for a token no key of ours signed. */
  verifierFor(token: string): Verifier | undefined;
  /** The JWK Set to publish: the current public key first, then the retired ones; empty with HS*. */
  readonly jwks: { keys: PublicJwk[] };
}

/**
 * HS*: one shared secret; the header's `kid` is not looked at, and nothing is published. The ring
 * is built once, so the token service and the JWKS endpoint share one set of KeyObjects and no key
 * is parsed or exported per request.
 */
export function secretKeyRing(algorithm: Algorithm, secret: string): KeyRing {
  // A KeyObject built once: a string secret would be re-parsed on every sign and verify.
  const signing = { key: createSecretKey(Buffer.from(secret, 'utf8')), algorithm };
  return Object.freeze({ signing, verifierFor: () => signing, jwks: { keys: [] } });
}

/** RS256 and ES256: signs with the private key, verifies with it and with the retired public keys. */
export function asymmetricKeyRing(algorithm: AsymmetricAlgorithm, privateKey: KeyObject, retired: readonly KeyObject[]): KeyRing {
  const current = createPublicKey(privateKey);
  const byKid = new Map<string, Verifier>();
  const keys: PublicJwk[] = [];
  for (const publicKey of [current, ...retired]) {
    const jwk = publicJwk(publicKey);
    if (byKid.has(jwk.kid)) continue;
    // Each key verifies only the algorithm it signs: a retired RSA key stays RS256 after a move to ES256.
    byKid.set(jwk.kid, { key: publicKey, algorithm: jwk.alg });
    keys.push(jwk);
  }
  return Object.freeze({
    signing: { key: privateKey, algorithm, kid: keys[0].kid },
    verifierFor: (token: string) => {
      const kid = kidOf(token);
      return kid === undefined ? undefined : byKid.get(kid);
    },
    jwks: { keys },
  });
}

/** The `kid` of a JWT's header, read without parsing the rest of the token. */
function kidOf(token: string): string | undefined {
  const end = token.indexOf('.');
  if (end <= 0) return undefined;
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, end), 'base64url').toString('utf8'));
    const kid = (header as { kid?: unknown } | null)?.kid;
    return typeof kid === 'string' ? kid : undefined;
  } catch {
    return undefined;
  }
}
