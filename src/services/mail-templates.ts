export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The link the message carries, for the log transport. */
  link: string;
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function compose(to: string, subject: string, name: string, intro: string, action: string, link: string, lifetime: string, notYours: string): Mail {
  const text = [`Hello ${name},`, '', intro, '', link, '', `The link works once and expires in ${lifetime}.`, '', notYours, ''].join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif; line-height: 1.5">
<p>Hello ${escape(name)},</p>
<p>${escape(intro)}</p>
<p><a href="${escape(link)}">${escape(action)}</a></p>
<p>Or paste this address into your browser:<br>${escape(link)}</p>
<p>The link works once and expires in ${escape(lifetime)}.</p>
<p>${escape(notYours)}</p>
</body></html>
`;
  return { to, subject, text, html, link };
}

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;

export function verificationMail(appUrl: string, to: string, name: string, token: string, expireHours: number): Mail {
  return compose(
    to,
    'Confirm your e-mail address',
    name,
    'Please confirm that this is your e-mail address by opening the link below.',
    'Confirm my e-mail address',
    `${appUrl}/verify-email?token=${token}`,
    plural(expireHours, 'hour'),
    'If you did not create an account or change your address, ignore this message: nothing changes without the link.',
  );
}

export function passwordResetMail(appUrl: string, to: string, name: string, token: string, expireMinutes: number): Mail {
  return compose(
    to,
    'Reset your password',
    name,
    'Someone asked to reset the password of your account. Open the link below to choose a new one.',
    'Choose a new password',
    `${appUrl}/reset-password?token=${token}`,
    plural(expireMinutes, 'minute'),
    'If you did not ask for this, ignore this message: your password stays as it is. A newer request voids this link.',
  );
}
