import type Koa from 'koa';
import type { Kysely } from 'kysely';
import { adminOverviewRoom } from './admin-overview/wiring.js';
import { apiKeysRoom } from './api-keys/wiring.js';
import { auditRoom } from './audit/wiring.js';
import type { Config } from './config/index.js';
import type { Database } from './db/types.js';
import { emailCodeRoom } from './email-code/wiring.js';
import type { Services } from './handlers/types.js';
import { healthRoom } from './health/wiring.js';
import { providerAdmission } from './http/oidc-limits.js';
import { webApp } from './wiring/web-app.js';
import type { Housekeeping } from './infra/housekeeping.js';
import type { Logger } from './logger.js';
import { mailboxRoom } from './mailbox/wiring.js';
import { mfaRoom } from './mfa/wiring.js';
import type { OidcProvider } from './oidc/provider.js';
import { oidcRoom } from './oidc/wiring.js';
import { invitationsRoom, organizationsRoom } from './organizations/wiring.js';
import { providerPages } from './oidc-pages/provider-pages.js';
import { devicePages } from './oidc-pages/device-pages.js';
import { withProviderReturn } from './oidc-pages/router.js';
import { breachedPasswords } from './passwords/wiring.js';
import { providersRoom } from './providers/wiring.js';
import { reauthenticationRoom } from './reauthentication/wiring.js';
import { sessionsRoom } from './sessions/wiring.js';
import { userImportRoom } from './user-import/wiring.js';
import { usersRoom } from './users/wiring.js';
import type { WebhookDispatcher } from './webhooks/delivery.js';
import { webhooksRoom } from './webhooks/wiring.js';
import { openCore, type CoreOptions } from './wiring/core.js';

export interface App {
  koa: Koa;
  services: Services;
  /** The app's database, for the wiring's neighbours (tests read and seed rows through it). */
  db: Kysely<Database>;
  /** The purge on its schedule; `purge()` runs a pass now. */
  housekeeping: Housekeeping;
  /** Webhook delivery; `prune()` deletes finished deliveries past their retention now. */
  webhooks: WebhookDispatcher;
  /** The OpenID Connect provider, when OIDC_ENABLED. */
  oidc: OidcProvider | undefined;
  logger: Logger;
  /** Readiness turns 503 and responses ask clients to close their connections; requests are still served. */
  beginShutdown(): void;
  close(): Promise<void>;
}

export interface AppOptions extends CoreOptions {
  /**
   * Compile every operation's request validator in the background once the app has started (the
   * default), so that no request waits for its own. An app that serves a few operations and stops
   * soon (a test's) does better to compile each when it is first asked for.
   */
  compileValidatorsAhead?: boolean;
}

/**
 * Wires the service: the core (the migrated database and the machinery every capability shares),
 * each capability from what it needs, then the HTTP application over their services.
 */
export async function createApp(config: Config, options: AppOptions = {}): Promise<App> {
  const core = await openCore(config, options);
  try {
    const breached = breachedPasswords(core);
    const { organizations, organizationRoles, organizationDomains, organizationSignIn } = organizationsRoom(core);
    const { factors, mfa, totp } = mfaRoom(core, { organizations });
    const { mailbox } = mailboxRoom(core);
    const { organizationInvitations } = invitationsRoom(core, { organizations });
    const { oidc, ...oidcServices } = oidcRoom(core, {
      pages: providerPages(config.oidc.brandName),
      devicePages: devicePages(config.oidc.brandName),
      admit: core.limits && providerAdmission(core.limits.guard),
      organizations,
    });
    const health = healthRoom(core);
    const services: Services = {
      factors,
      mfa,
      ...oidcServices,
      ...health,
      ...adminOverviewRoom(core, { about: health.about }),
      organizations,
      organizationRoles,
      organizationDomains,
      organizationSignIn,
      organizationInvitations,
      ...sessionsRoom(core, { mfa, breached, organizations }),
      ...usersRoom(core, { breached, mailbox }),
      ...reauthenticationRoom(core, { totp, organizations }),
      ...userImportRoom(core),
      ...auditRoom(core),
      ...apiKeysRoom(core),
      ...webhooksRoom(core),
      ...providersRoom(core, { mfa, mailbox, redirects: withProviderReturn(config.redirects, config.account.appUrl) }),
      ...emailCodeRoom(core, { mfa, mailbox }),
    };
    if (config.admin) {
      const admin = await services.users.ensureAdmin(config.admin.email, config.admin.password);
      if (admin) core.logger.info({ userId: admin.id }, 'created the admin account from ADMIN_EMAIL');
    }
    // The parts of the contract a setting turns off, by the `x-feature` their operations carry.
    const features = { oidc: config.oidc.enabled, 'email-code': config.emailCode.enabled };
    const web = await webApp(core, services, oidc, features, { compileValidatorsAhead: options.compileValidatorsAhead ?? true });
    core.start();
    core.logger.debug({ database: core.kind }, 'app ready');
    return {
      koa: web.koa,
      services,
      db: core.db,
      housekeeping: core.housekeeping,
      webhooks: core.webhooks,
      oidc,
      logger: core.logger,
      beginShutdown() {
        core.lifecycle.draining = true;
      },
      async close() {
        web.stop();
        await services.account.settled();
        await services.emailCode.settled();
        await core.stop();
      },
    };
  } catch (error) {
    await core.db.destroy();
    throw error;
  }
}
