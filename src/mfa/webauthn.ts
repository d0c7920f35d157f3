import { createRequire } from 'node:module';
import type { AuthenticationResponseJSON, AuthenticatorSelectionCriteria, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { WebAuthnConfig } from '../config/index.js';

const require = createRequire(import.meta.url);

type SimpleWebAuthn = typeof import('@simplewebauthn/server');

let library: SimpleWebAuthn | undefined;

/**
 * @simplewebauthn/server, with the ASN.1 and CBOR parsers it brings, adds some 15 MB to a process: it
 * loads with the first passkey operation rather than at start-up, so a process that never sees one
 * does without it.
 */
// Required on first use, as said above (its CommonJS build)
const simpleWebAuthn = (): SimpleWebAuthn => (library ??= require('@simplewebauthn/server') as SimpleWebAuthn);

/** How long a WebAuthn challenge may be answered. */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000;

/** A registered passkey, as an assertion is checked against it. */
export interface StoredPasskey {
  credentialId: string;
  publicKey: string;
  counter: number;
  transports?: string[];
}

type Credential = { id: string; response: { clientDataJSON: string } } & Record<string, unknown>;

/** A passkey named in options: its credential id (base64url) and how its authenticator is reached. */
export interface CredentialDescriptor {
  id: string;
  type: 'public-key';
  transports?: string[];
}

/**
 * `PublicKeyCredentialCreationOptionsJSON` as this party makes it, for
 * `PublicKeyCredential.parseCreationOptionsFromJSON()`.
 */
export interface CreationOptions {
  challenge: string;
  rp: { name: string; id: string };
  user: { id: string; name: string; displayName: string };
  pubKeyCredParams: { alg: number; type: 'public-key' }[];
  timeout: number;
  attestation: 'none';
  excludeCredentials: CredentialDescriptor[];
  authenticatorSelection: AuthenticatorSelectionCriteria;
  extensions?: { credProps?: boolean };
  hints?: string[];
}

/** `PublicKeyCredentialRequestOptionsJSON` as this party makes it, for `parseRequestOptionsFromJSON()`. */
export interface RequestOptions {
  challenge: string;
  rpId: string;
  timeout: number;
  userVerification: 'required' | 'preferred';
  allowCredentials?: CredentialDescriptor[];
}

/**
 * The WebAuthn ceremonies of this relying party: options in their JSON form, and the checks of
 * what authenticators answer (challenge, origin, RP ID, flags, signature, counter). A check that
 * fails answers undefined; why is not the client's business.
 */
export class WebAuthnParty {
  constructor(private readonly party: WebAuthnConfig) {}

  async creationOptions(input: {
    userHandle: string;
    userName: string;
    displayName: string;
    exclude: { id: string; transports?: string[] }[];
  }): Promise<CreationOptions> {
    const { generateRegistrationOptions } = simpleWebAuthn();
    const options = await generateRegistrationOptions({
      rpName: this.party.rpName,
      rpID: this.party.rpId,
      userName: input.userName,
      userID: new Uint8Array(Buffer.from(input.userHandle, 'base64url')),
      userDisplayName: input.displayName,
      timeout: CHALLENGE_TTL_MS,
      attestationType: 'none',
      excludeCredentials: input.exclude,
      // Discoverable, so that the passkey signs in without an e-mail typed first.
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    // The library's JSON type leaves optional what these settings always fill in.
    return {
      challenge: options.challenge,
      rp: { name: this.party.rpName, id: this.party.rpId },
      user: options.user,
      pubKeyCredParams: options.pubKeyCredParams.map(({ alg }) => ({ alg, type: 'public-key' })),
      timeout: CHALLENGE_TTL_MS,
      attestation: 'none',
      excludeCredentials: (options.excludeCredentials ?? []).map(descriptor),
      authenticatorSelection: options.authenticatorSelection ?? {},
      ...(options.extensions?.credProps !== undefined && { extensions: { credProps: options.extensions.credProps } }),
      ...(options.hints && { hints: options.hints }),
    };
  }

  async requestOptions(input: {
    allow?: { id: string; transports?: string[] }[];
    userVerification: 'required' | 'preferred';
  }): Promise<RequestOptions> {
    const { generateAuthenticationOptions } = simpleWebAuthn();
    const options = await generateAuthenticationOptions({
      rpID: this.party.rpId,
      allowCredentials: input.allow,
      userVerification: input.userVerification,
      timeout: CHALLENGE_TTL_MS,
    });
    return {
      challenge: options.challenge,
      rpId: this.party.rpId,
      timeout: CHALLENGE_TTL_MS,
      userVerification: input.userVerification,
      ...(options.allowCredentials && { allowCredentials: options.allowCredentials.map(descriptor) }),
    };
  }

  /** The challenge a credential answers, read from its client data; undefined when unreadable. */
  challengeOf(credential: Credential): string | undefined {
    try {
      const clientData = JSON.parse(Buffer.from(credential.response.clientDataJSON, 'base64url').toString('utf8')) as {
        challenge?: unknown;
      };
      return typeof clientData.challenge === 'string' ? clientData.challenge : undefined;
    } catch {
      return undefined;
    }
  }

  /** What every answer of an authenticator is checked against: the challenge, our origins and RP ID. */
  private expected(challenge: string) {
    return { expectedChallenge: challenge, expectedOrigin: [...this.party.origins], expectedRPID: this.party.rpId };
  }

  async verifyRegistration(credential: Credential, expectedChallenge: string): Promise<StoredPasskey | undefined> {
    const { verifyRegistrationResponse } = simpleWebAuthn();
    try {
      const { verified, registrationInfo } = await verifyRegistrationResponse({
        response: { clientExtensionResults: {}, ...credential } as unknown as RegistrationResponseJSON,
        ...this.expected(expectedChallenge),
        requireUserVerification: false,
      });
      if (!verified) return undefined;
      const { id, publicKey, counter, transports } = registrationInfo.credential;
      return { credentialId: id, publicKey: Buffer.from(publicKey).toString('base64url'), counter, transports };
    } catch {
      return undefined;
    }
  }

  async verifyAssertion(
    credential: Credential,
    expectedChallenge: string,
    passkey: StoredPasskey,
    requireUserVerification: boolean,
  ): Promise<{ newCounter: number; userVerified: boolean } | undefined> {
    const { verifyAuthenticationResponse } = simpleWebAuthn();
    try {
      const { verified, authenticationInfo } = await verifyAuthenticationResponse({
        response: { clientExtensionResults: {}, ...credential } as unknown as AuthenticationResponseJSON,
        ...this.expected(expectedChallenge),
        credential: {
          id: passkey.credentialId,
          publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
          counter: passkey.counter,
          transports: passkey.transports,
        },
        requireUserVerification,
      });
      return verified ? { newCounter: authenticationInfo.newCounter, userVerified: authenticationInfo.userVerified } : undefined;
    } catch {
      return undefined;
    }
  }
}

function descriptor(credential: { id: string; transports?: string[] }): CredentialDescriptor {
  return { id: credential.id, type: 'public-key', ...(credential.transports && { transports: credential.transports }) };
}
