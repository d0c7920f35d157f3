import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { addVirtualAuthenticator } from './browser.js';

/**
 * The page the passkey ceremonies run from: the same calls a web app of the service makes, with the
 * JSON options the API answers parsed by the browser and the credentials sent back as their toJSON().
 */
export const PASSKEY_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Passkeys</title></head><body>
<script>
async function api(path, body, token) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch(path, { method: 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}
async function registrationAnswer(token) {
  const options = (await api('/api/auth/passkeys/registration/options', undefined, token)).body.data;
  const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) });
  return credential.toJSON();
}
async function registerPasskey(token, name) {
  return api('/api/auth/passkeys/registration', { credential: await registrationAnswer(token), name }, token);
}
async function passkeyAssertion() {
  const { challenge_id, options } = (await api('/api/auth/passkeys/login/options', {})).body.data;
  const credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) });
  return { challenge_id, credential: credential.toJSON() };
}
async function signInWithPasskey() {
  return api('/api/auth/passkeys/login', await passkeyAssertion());
}
async function secondFactorWithPasskey(mfaToken) {
  const options = (await api('/api/auth/mfa/webauthn/options', { mfa_token: mfaToken })).body.data;
  const credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) });
  return api('/api/auth/mfa/verify', { mfa_token: mfaToken, method: 'webauthn', credential: credential.toJSON() });
}
</script></body></html>`;

/** An answer of the API as the page reads it. */
export interface PageAnswer {
  status: number;
  body: any;
}

/** The app's API on 127.0.0.1:`port`, with the ceremony page at /passkeys. */
export function servePasskeyPage(api: (req: IncomingMessage, res: ServerResponse) => unknown, port: number): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const listening = createServer((req, res) => {
      if (req.url === '/passkeys') {
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(PASSKEY_PAGE);
        return;
      }
      void api(req, res);
    });
    listening.once('error', reject);
    listening.listen(port, '127.0.0.1', () => resolve(listening));
  });
}

/** The ceremony page at `origin`, with a virtual authenticator of its own (discoverable keys, user verification). */
export async function openPasskeyPage(browser: Browser, origin: string): Promise<{ page: Page; cdp: CDPSession; authenticatorId: string }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  const cdp = await page.context().newCDPSession(page);
  const authenticatorId = await addVirtualAuthenticator(cdp);
  await page.goto(`${origin}/passkeys`);
  return { page, cdp, authenticatorId };
}
