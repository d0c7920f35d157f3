import type Koa from 'koa';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { recordDevicePoll } from './device-poll-repository.js';
import type { ProviderClass, ProviderMiddleware } from './library.js';

/** The token endpoint's grant of the device authorization grant (RFC 8628). */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** How long a device waits between two polls, at first: RFC 8628's default, said in every answer. */
export const DEVICE_POLL_INTERVAL_SECONDS = 5;
/** What a poll sooner than the interval adds to it (RFC 8628 §3.5). */
const SLOW_DOWN_STEP_SECONDS = 5;

/** The client a device code was issued to, as the pages show it. */
export interface DeviceClient {
  name: string;
  /** Registered itself (RFC 7591): its name is its own claim. */
  registered: boolean;
}

/** Why the page that asks for the user code asks again. */
export type UserCodeProblem = 'missing' | 'not_found' | 'expired' | 'used' | 'cancelled' | 'refused' | 'failed';

/** The hosted page `/oauth2/device`: its forms post `xsrf` (the provider's own value) and `user_code` to `action`. */
export interface DevicePages {
  /** Asks for the code the device shows; again with `problem` when the last answer was refused. */
  userCode(ctx: Koa.Context, form: { action: string; xsrf: string; userCode?: string; problem?: UserCodeProblem }): Promise<void>;
  /** Which application, on which device, the code belongs to: continue (`confirm=yes`) or cancel (`abort=yes`). */
  confirm(
    ctx: Koa.Context,
    form: { action: string; xsrf: string; userCode: string; client: DeviceClient; device: { ip?: string; userAgent?: string } },
  ): Promise<void>;
  /** The device is signed in: the person goes back to it. */
  success(ctx: Koa.Context, client: DeviceClient | undefined): Promise<void>;
  /** A form this browser was not given (it has no page open here): the way back to the page that asks for the code. */
  refused(ctx: Koa.Context, page: { action: string }): Promise<void>;
}

/** What the provider's context holds on the device routes. */
interface DeviceContext extends Koa.Context {
  oidc?: {
    route?: string;
    params?: Record<string, unknown>;
    session?: { state?: { secret?: string } };
    client?: { clientId: string; clientName?: string; metadata(): Record<string, unknown> };
    urlFor(name: string): string;
  };
}

/** A client of the provider's, as the pages name it; `selfRegistered` is the metadata key of clients that registered themselves. */
function deviceClient(
  client: { clientId: string; clientName?: string; metadata(): Record<string, unknown> } | undefined,
  selfRegistered: string,
): DeviceClient | undefined {
  return client && { name: client.clientName ?? client.clientId, registered: client.metadata()[selfRegistered] === true };
}

/** The library's re-rendering errors of the user code page, by name, as the page words them. */
const PROBLEMS: Record<string, UserCodeProblem> = {
  NoCodeError: 'missing',
  NotFoundError: 'not_found',
  ExpiredError: 'expired',
  AlreadyUsedError: 'used',
  AbortedError: 'cancelled',
};

/** The library's refusals of a form without the page's xsrf value. */
const FORGED = new Set(['xsrf token invalid', 'could not find device form details']);

function problemOf(error: unknown): UserCodeProblem | undefined {
  if (error === undefined) return undefined;
  const { name, error_description: description } = error as { name?: string; error_description?: string };
  if (name === 'InvalidRequest' && FORGED.has(description ?? '')) return 'refused';
  return PROBLEMS[name ?? ''] ?? 'failed';
}

/** The provider's xsrf value of the page, kept in its session as the library's own forms carry it. */
const xsrfOf = (ctx: DeviceContext) => ctx.oidc?.session?.state?.secret ?? '';

/**
 * oidc-provider's `features.deviceFlow`, its pages the service's: the user code asked for, then
 * confirmed against the application and the device that asked, then the hosted sign-in, second
 * factor and consent of the authorization code flow, then the success page. User codes are eight
 * letters of the library's base-20 alphabet (no vowels), shown as XXXX-XXXX.
 */
export function deviceFlowFeature(pages: DevicePages, selfRegistered: string) {
  return {
    enabled: true,
    charset: 'base-20',
    mask: '****-****',
    userCodeInputSource: (ctx: DeviceContext, _form: string, _out?: unknown, error?: { userCode?: string }) =>
      pages.userCode(ctx, {
        action: ctx.oidc!.urlFor('code_verification'),
        xsrf: xsrfOf(ctx),
        userCode: error?.userCode,
        problem: problemOf(error),
      }),
    userCodeConfirmSource: (
      ctx: DeviceContext,
      _form: string,
      client: { clientId: string; clientName?: string; metadata(): Record<string, unknown> },
      deviceInfo: { ip?: string; ua?: string } | undefined,
      userCode: string,
    ) =>
      pages.confirm(ctx, {
        action: ctx.oidc!.urlFor('code_verification'),
        xsrf: xsrfOf(ctx),
        userCode,
        client: deviceClient(client, selfRegistered)!,
        device: { ip: deviceInfo?.ip, userAgent: deviceInfo?.ua },
      }),
    successSource: (ctx: DeviceContext) => pages.success(ctx, deviceClient(ctx.oidc?.client, selfRegistered)),
  };
}

/**
 * oidc-provider middleware (`provider.use`) for the page's posts from a browser that has no provider
 * session (it never opened the page here, or its session is gone): refused on a page of the service's.
 * The library answers them with the page again, and then fails to keep the session it made for that
 * page, throwing this TypeError (a 500 otherwise).
 */
export function refuseSessionlessPosts(pages: DevicePages, path: string): ProviderMiddleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const unkept = error instanceof TypeError && error.message === 'persist can only be called on previously persisted Sessions';
      if (!unkept || ctx.method !== 'POST' || ctx.path !== path) throw error;
      await pages.refused(ctx, { action: path });
    }
  };
}

/** The library's words for a client without the device grant, at the device authorization and token endpoints. */
const WITHOUT_GRANT: Record<string, string> = {
  device_authorization: `${DEVICE_CODE_GRANT} is not allowed for this client`,
  token: 'requested grant type is not allowed for this client',
};

/**
 * oidc-provider middleware (`provider.use`) for a client that asks for a grant it was not given (the
 * device grant at either endpoint, or any grant at the token endpoint): the library says
 * `invalid_request`; RFC 6749 (section 5.2) names this `unauthorized_client`, which client
 * libraries, device ones among them, expect.
 */
export function unauthorizedClientWithoutGrant(): ProviderMiddleware {
  return async (ctx: DeviceContext, next) => {
    await next();
    const body = ctx.body as { error?: unknown; error_description?: unknown } | undefined;
    const route = ctx.oidc?.route ?? '';
    if (body?.error !== 'invalid_request' || !Object.hasOwn(WITHOUT_GRANT, route) || body.error_description !== WITHOUT_GRANT[route])
      return;
    body.error = 'unauthorized_client';
  };
}

/**
 * oidc-provider middleware (`provider.use`) for `verification_uri_complete`: the library answers it
 * with a page whose script posts the code on at once. The service's pages run no such script; the
 * code is filled in on the page that asks for it instead, and the person continues from there.
 */
export function prefilledUserCode(pages: DevicePages): ProviderMiddleware {
  return async (ctx: DeviceContext, next) => {
    await next();
    const oidc = ctx.oidc;
    if (ctx.method !== 'GET' || oidc?.route !== 'code_verification' || ctx.status !== 200) return;
    const userCode = oidc.params?.user_code;
    if (typeof userCode !== 'string' || userCode === '') return;
    await pages.userCode(ctx, { action: oidc.urlFor('code_verification'), xsrf: xsrfOf(ctx), userCode });
  };
}

/** What the token endpoint's context holds once the client is authenticated. */
interface TokenContext {
  oidc: { params: Record<string, unknown>; client: { clientId: string } };
}

type GrantHandler = (ctx: TokenContext) => Promise<void>;

/**
 * The provider class with the device code grant paced: a poll sooner than the interval after the
 * device's last one is answered `slow_down`, and adds five seconds to the interval (RFC 8628 §3.5);
 * the library itself does not count polls. The library registers its grants as it is constructed,
 * through `registerGrantType`, which this class wraps for the device code grant alone.
 */
export function withPacedDevicePolling(
  Base: ProviderClass,
  db: Kysely<Database>,
  SlowDown: new (description?: string) => Error,
): ProviderClass {
  const Registering = Base as unknown as new (...args: ConstructorParameters<ProviderClass>) => {
    registerGrantType(name: string, handler: GrantHandler, ...rest: unknown[]): void;
  };
  const pace = async (ctx: TokenContext) => {
    const deviceCode = ctx.oidc.params.device_code;
    if (typeof deviceCode !== 'string') return;
    const poll = await recordDevicePoll(db, {
      deviceCode,
      clientId: ctx.oidc.client.clientId,
      intervalSeconds: DEVICE_POLL_INTERVAL_SECONDS,
      stepSeconds: SLOW_DOWN_STEP_SECONDS,
    });
    if (poll?.tooSoon) throw new SlowDown(`poll at most every ${poll.intervalSeconds} seconds`);
  };
  class PacedProvider extends Registering {
    override registerGrantType(name: string, handler: GrantHandler, ...rest: unknown[]): void {
      const paced: GrantHandler =
        name === DEVICE_CODE_GRANT
          ? async (ctx) => {
              await pace(ctx);
              await handler(ctx);
            }
          : handler;
      super.registerGrantType(name, paced, ...rest);
    }
  }
  return PacedProvider as unknown as ProviderClass;
}

/** The device authorization's answer says the interval, which the library leaves to RFC 8628's default. */
export function sayInterval(body: Record<string, unknown>): void {
  body.interval = DEVICE_POLL_INTERVAL_SECONDS;
}
