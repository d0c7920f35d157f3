import { createRequire } from 'node:module';
import type { MailConfig } from '../config/index.js';
import type { Logger } from '../logger.js';

const require = createRequire(import.meta.url);

/** A message ready to send. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The link the message carries, for the log transport; notices carry none. */
  link?: string;
  /** The one-time code the message carries (a sign-in code), for the log transport. */
  code?: string;
  /** The Message-ID header; the transport makes one when it is absent. */
  messageId?: string;
}

/** Delivers one message or throws. */
export interface MailTransport {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/**
 * SMTP through nodemailer when SMTP_URL is set; otherwise each message goes to the log, with its link
 * and code only when MAIL_LOG_LINKS allows it (the default outside production; production needs
 * SMTP_URL or MAIL_LOG_LINKS=true to start at all): a developer signs in with either.
 */
export function createTransport(config: MailConfig, logger: Logger): MailTransport {
  if (!config.smtpUrl) {
    return {
      async send(mail) {
        if (config.logLinks) {
          const { to, subject, link, code } = mail;
          logger.info(
            { mail: { to, subject, link, code } },
            `mail not sent (no SMTP_URL): here is its link${code === undefined ? '' : ' and code'}`,
          );
        } else {
          logger.info(
            { mail: { to: mail.to, subject: mail.subject } },
            'mail not sent (no SMTP_URL); its link is not logged (MAIL_LOG_LINKS=false)',
          );
        }
      },
      close() {},
    };
  }
  // Loaded only here: most of a start's time is loading modules, and a service without SMTP needs none of it.
  const nodemailer = require('nodemailer') as typeof import('nodemailer');
  // Short timeouts, so that a server that hangs delays the queue a little, not for minutes.
  // requireTLS: a server (or someone in between) that offers no STARTTLS gets no message, rather than one in clear.
  const smtp = nodemailer.createTransport({
    url: config.smtpUrl,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
    ...(config.smtpRequireTls ? { requireTLS: true } : {}),
  });
  return {
    async send(mail) {
      await smtp.sendMail({
        from: config.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        messageId: mail.messageId,
      });
    },
    close: () => smtp.close(),
  };
}
