import { loadConfig } from '../src/config/index.js';
import { allowedRedirect } from '../src/redirects/allow-list.js';
import { problemsOf } from './support/config.js';

const SECRET_KEY = 'x'.repeat(32);

describe('redirect allow-list (AUTH_REDIRECT_URLS)', () => {
  it('allows any path under the origin of APP_URL by default, and nothing else', () => {
    const { redirects } = loadConfig({ SECRET_KEY, APP_URL: 'https://accounts.example.com/base' });
    expect(allowedRedirect(redirects, 'https://accounts.example.com/app/callback?x=1')?.href).toBe(
      'https://accounts.example.com/app/callback?x=1',
    );
    expect(allowedRedirect(redirects, 'https://accounts.example.com')?.href).toBe('https://accounts.example.com/');
    for (const refused of [
      'https://accounts.example.com.evil.test/cb',
      'http://accounts.example.com/cb',
      'https://accounts.example.com:8443/cb',
      'https://accounts.example.com@evil.test/cb',
      'https://user:pass@accounts.example.com/cb',
      'https://accounts.example.com/cb#access',
      'https:\\\\evil.test/cb',
      '//evil.test/cb',
      '/relative/cb',
      'javascript:alert(1)',
      'https://accounts.example.com/c\tb',
      '',
    ]) {
      expect([refused, allowedRedirect(redirects, refused)]).toEqual([refused, undefined]);
    }
  });

  it('takes exact URLs and origin wildcards, exact ones matching only themselves', () => {
    const { redirects } = loadConfig({
      SECRET_KEY,
      AUTH_REDIRECT_URLS: 'https://app.example.com/auth/callback, myapp://signed-in ,http://localhost:3000/*',
    });
    expect(allowedRedirect(redirects, 'https://app.example.com/auth/callback')).toBeDefined();
    expect(allowedRedirect(redirects, 'https://app.example.com/auth/callback2')).toBeUndefined();
    expect(allowedRedirect(redirects, 'https://app.example.com/auth/callback?next=/')).toBeUndefined();
    expect(allowedRedirect(redirects, 'myapp://signed-in')).toBeDefined();
    expect(allowedRedirect(redirects, 'myapp://other')).toBeUndefined();
    expect(allowedRedirect(redirects, 'http://localhost:3000/any/path?q=1')).toBeDefined();
    expect(allowedRedirect(redirects, 'http://localhost:3001/any/path')).toBeUndefined();
    // The default is replaced, not added to.
    expect(allowedRedirect(redirects, 'http://localhost:8000/')).toBeUndefined();
  });

  it('refuses entries that are not an exact URL or an origin with /*, naming each', () => {
    expect(
      problemsOf({ SECRET_KEY, AUTH_REDIRECT_URLS: 'not a url,https://app.example.com/path/*,https://u:p@app.example.com/cb' }),
    ).toEqual([
      expect.stringContaining('AUTH_REDIRECT_URLS: "not a url" is not an absolute URL'),
      expect.stringContaining('AUTH_REDIRECT_URLS: "https://app.example.com/path/*": /* may only follow an origin'),
      expect.stringContaining('AUTH_REDIRECT_URLS: "https://u:p@app.example.com/cb" may not carry a user name or password'),
    ]);
  });
});
