import type { Context } from 'koa';
import type { DeviceClient, DevicePages, UserCodeProblem } from '../oidc/device-flow.js';
import { escape, field, hidden, paragraph, show, type Notice } from './layout.js';

/** What the page says about a code it did not take, and with which status. */
const PROBLEMS: Record<UserCodeProblem, { status: number; notice: Notice }> = {
  missing: { status: 422, notice: { kind: 'error', text: 'Enter the code your device shows.' } },
  not_found: {
    status: 400,
    notice: { kind: 'error', text: 'That code is not right. Check the code on your device and enter it again.' },
  },
  expired: {
    status: 400,
    notice: { kind: 'error', text: 'That code has expired. Start again on your device to get a new one.' },
  },
  used: {
    status: 400,
    notice: { kind: 'error', text: 'That code was used already. Start again on your device to get a new one.' },
  },
  cancelled: {
    status: 200,
    notice: { kind: 'success', text: 'The device was not signed in. If you want to sign it in after all, start again on it.' },
  },
  refused: {
    status: 403,
    notice: {
      kind: 'error',
      text: 'This form could not be accepted (it was not sent from this page in this browser). Enter the code again.',
    },
  },
  failed: {
    status: 400,
    notice: { kind: 'error', text: 'The device could not be signed in. Start again on your device to get a new code.' },
  },
};

/** The application in words: an admin's client by its name, one that registered itself by its own claim, quoted. */
const applicationMarkup = (client: DeviceClient) =>
  client.registered
    ? `The application that calls itself “<strong>${escape(client.name)}</strong>”`
    : `<strong>${escape(client.name)}</strong>`;

/** The device sign-in's pages (`/oauth2/device`) naming the product `service` (BRAND_NAME), in the hosted pages' look and under their policy. */
export function devicePages(service: string): DevicePages {
  return {
    async userCode(ctx: Context, { action, xsrf, userCode, problem }) {
      const shown = problem === undefined ? undefined : PROBLEMS[problem];
      show(ctx, service, {
        status: shown?.status ?? 200,
        title: 'Sign in a device',
        notice: shown?.notice,
        body:
          paragraph(`Enter the code your device shows, to sign it in to your ${service} account.`) +
          `<form method="post" action="${escape(action)}">
${hidden({ xsrf })}
${field(
  'user_code',
  'Code from your device',
  `type="text" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="20" value="${escape(userCode ?? '')}"`,
  'Eight letters, like BDFG-HJKL.',
)}<button type="submit">Continue</button>
</form>
`,
      });
    },

    async confirm(ctx: Context, { action, xsrf, userCode, client, device }) {
      const from = [device.ip, device.userAgent].filter((part): part is string => typeof part === 'string' && part !== '');
      show(ctx, service, {
        status: 200,
        title: 'Sign in a device',
        notice: client.registered
          ? {
              kind: 'error',
              text: `This application is not verified by ${service}: it registered itself, and its name is its own claim. Continue only if you trust it.`,
            }
          : undefined,
        body:
          `<p>${applicationMarkup(client)} asks to sign in to your ${escape(service)} account on a device.</p>\n` +
          paragraph('Check that your device shows this code:') +
          `<p><strong>${escape(userCode)}</strong></p>\n` +
          (from.length > 0 ? `<p class="hint">The device asked from ${escape(from.join(', '))}.</p>\n` : '') +
          paragraph('If you did not start this on a device of yours, or the code is not the one it shows, cancel.') +
          `<form method="post" action="${escape(action)}">
${hidden({ xsrf, user_code: userCode })}
<div class="actions">
<button type="submit" name="confirm" value="yes">Continue</button>
<button type="submit" name="abort" value="yes" class="secondary">Cancel</button>
</div>
</form>
`,
      });
    },

    async refused(ctx: Context, { action }) {
      show(ctx, service, {
        status: 403,
        title: 'Sign in a device',
        notice: PROBLEMS.refused.notice,
        body: `<p><a href="${escape(action)}">Enter the code from your device</a></p>\n`,
      });
    },

    async success(ctx: Context, client) {
      show(ctx, service, {
        status: 200,
        title: 'Device signed in',
        notice: { kind: 'success', text: 'Your device is signed in.' },
        body:
          (client ? `<p>${applicationMarkup(client)} on your device is signed in to your ${escape(service)} account.</p>\n` : '') +
          paragraph('You can close this page and go back to your device.'),
      });
    },
  };
}
