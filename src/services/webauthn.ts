import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';

/** How long a WebAuthn challenge may be answered. */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000;

export interface RelyingParty {
  rpId: string;
  rpName: string;
  origins: readonly string[];
}

/** A registered passkey, as an assertion is checked against it. */
export interface StoredPasskey {
  credentialId: string;
  publicKey: string;
  counter: number;
  transports?: string[];
}

type Credential = { id: string; response: { clientDataJSON: string } } & Record<string, unknown>;

/**
 * The WebAuthn ceremonies of this relying party: options in their JSON form, and the checks of
 * what authenticators answer (challenge, origin, RP ID, flags, signature, counter). A check that
 * fails answers undefined; why is not the client's business.
 */
export class WebAuthnParty {
  constructor(private readonly party: RelyingParty) {}

  creationOptions(input: {
    userHandle: string;
    userName: string;
    displayName: string;
    exclude: { id: string; transports?: string[] }[];
  }): Promise<PublicKeyCredentialCreationOptionsJSON> {
    return generateRegistrationOptions({
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
  }

  requestOptions(input: { allow?: { id: string; transports?: string[] }[]; userVerification: 'required' | 'preferred' }): Promise<PublicKeyCredentialRequestOptionsJSON> {
    return generateAuthenticationOptions({
      rpID: this.party.rpId,
      allowCredentials: input.allow,
      userVerification: input.userVerification,
      timeout: CHALLENGE_TTL_MS,
    });
  }

  /** The challenge a credential answers, read from its client data; undefined when unreadable. */
  challengeOf(credential: Credential): string | undefined {
    try {
      const clientData = JSON.parse(Buffer.from(credential.response.clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown };
      return typeof clientData.challenge === 'string' ? clientData.challenge : undefined;
    } catch {
      return undefined;
    }
  }

  async verifyRegistration(credential: Credential, expectedChallenge: string): Promise<StoredPasskey | undefined> {
    try {
      const { verified, registrationInfo } = await verifyRegistrationResponse({
        response: { clientExtensionResults: {}, ...credential } as unknown as RegistrationResponseJSON,
        expectedChallenge,
        expectedOrigin: [...this.party.origins],
        expectedRPID: this.party.rpId,
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
    try {
      const { verified, authenticationInfo } = await verifyAuthenticationResponse({
        response: { clientExtensionResults: {}, ...credential } as unknown as AuthenticationResponseJSON,
        expectedChallenge,
        expectedOrigin: [...this.party.origins],
        expectedRPID: this.party.rpId,
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
