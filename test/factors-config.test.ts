import { loadConfig } from '../src/config/index.js';
import { startTestApp } from './support/app.js';
import { problemsOf } from './support/config.js';

// The relying party of passkeys and the TOTP issuer, as the environment sets them.

describe('second-factor configuration', () => {
  it('takes the relying party and the origin from APP_URL by default', () => {
    const config = loadConfig({ APP_URL: 'https://accounts.example.com/base' });
    expect(config.mfa).toEqual({
      totp: { issuer: 'Account Service' },
      webauthn: { rpId: 'accounts.example.com', rpName: 'Account Service', origins: ['https://accounts.example.com'] },
    });
    expect(Object.isFrozen(config.mfa.webauthn.origins)).toBe(true);
  });

  it.each([
    [{}, 'http://localhost:8000'],
    [{ PORT: '9000' }, 'http://localhost:9000'],
    [{ APP_URL: 'http://192.168.1.5:3000' }, 'http://localhost:3000'],
    [{ APP_URL: 'https://[::1]:8443' }, 'https://localhost:8443'],
    [{ HOST: 'localhost' }, 'http://localhost:8000'],
  ])(
    'with %j (an IP address as the host of APP_URL, which browsers refuse as a relying party, or localhost), passkeys work on localhost: %s',
    (env, origin) => {
      expect(loadConfig(env).mfa.webauthn).toEqual({ rpId: 'localhost', rpName: 'Account Service', origins: [origin] });
    },
  );

  it('keeps an IP address of APP_URL when WEBAUTHN_RP_ID is set', () => {
    expect(
      loadConfig({ APP_URL: 'http://192.168.1.5:3000', WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://example.com' }).mfa
        .webauthn,
    ).toEqual({
      rpId: 'example.com',
      rpName: 'Account Service',
      origins: ['https://example.com'],
    });
  });

  it('serves passkey options naming localhost under the defaults', async () => {
    const t = await startTestApp();
    try {
      const user = await t.register();
      const options = await t.post('/api/auth/passkeys/registration/options', undefined, { token: user.access });
      expect(options.status).toBe(200);
      expect(options.body.data.rp).toEqual({ name: 'Account Service', id: 'localhost' });
    } finally {
      await t.close();
    }
  }, 180_000);

  it('takes a parent domain and origins on it or its subdomains', () => {
    const config = loadConfig({
      APP_URL: 'https://accounts.example.com',
      WEBAUTHN_RP_ID: 'Example.com',
      WEBAUTHN_ORIGINS: 'https://example.com, https://app.example.com/',
      WEBAUTHN_RP_NAME: 'Example',
      MFA_ISSUER: 'Example Accounts',
    });
    expect(config.mfa).toEqual({
      totp: { issuer: 'Example Accounts' },
      webauthn: { rpId: 'example.com', rpName: 'Example', origins: ['https://example.com', 'https://app.example.com'] },
    });
  });

  it('names each bad setting', () => {
    expect(problemsOf({ WEBAUTHN_RP_ID: 'https://example.com' })).toEqual([
      'WEBAUTHN_RP_ID must be a domain name such as example.com (no scheme, port or path), got "https://example.com"',
      'WEBAUTHN_ORIGINS: "http://localhost:8000" is not on WEBAUTHN_RP_ID "https://example.com" or a subdomain of it',
    ]);
    expect(problemsOf({ WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://example.org,app.example.com' })).toEqual([
      'WEBAUTHN_ORIGINS: "https://example.org" is not on WEBAUTHN_RP_ID "example.com" or a subdomain of it',
      'WEBAUTHN_ORIGINS: "app.example.com" is not an origin like https://app.example.com',
    ]);
    expect(problemsOf({ WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://notexample.com' })).toEqual([
      'WEBAUTHN_ORIGINS: "https://notexample.com" is not on WEBAUTHN_RP_ID "example.com" or a subdomain of it',
    ]);
  });
});
