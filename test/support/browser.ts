import { existsSync } from 'node:fs';
import { chromium, type Browser, type CDPSession } from 'playwright-core';

/** Chromium for the browser suites: CHROMIUM_PATH, else the system's. */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const haveBrowser = existsSync(CHROMIUM);

/**
 * `describe` when Chromium is there, `describe.skip` with a warning when it is not; with
 * REQUIRE_BROWSER=1 (CI) a missing Chromium is a failing test instead.
 */
export function describeInBrowser(name: string, suite: () => void): void {
  if (!haveBrowser && process.env.REQUIRE_BROWSER === '1') {
    describe(name, () => {
      it('needs Chromium', () => {
        throw new Error(`REQUIRE_BROWSER=1 but ${CHROMIUM} does not exist: install Chromium (apt-get install chromium)`);
      });
    });
    return;
  }
  if (!haveBrowser)
    console.warn(`${name}: skipped, ${CHROMIUM} not found (install chromium, or set REQUIRE_BROWSER=1 to make this a failure)`);
  (haveBrowser ? describe : describe.skip)(name, suite);
}

/** Headless Chromium, quiet: no sandbox (containers), no GPU, no background traffic. */
export function launchChromium(timeoutMs: number, extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: timeoutMs,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}

/**
 * A platform authenticator for the page, through the DevTools protocol: resident keys, user
 * verification, and a person who always touches it. Returns its id, for reading its credentials.
 */
export async function addVirtualAuthenticator(cdp: CDPSession): Promise<string> {
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return authenticatorId;
}
