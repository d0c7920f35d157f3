import { Unauthorized } from '../errors.js';
import type { Principal } from '../principal.js';
import type { WireReply } from './types.js';

type BodyAt<R, S> = R extends { status: S; body: infer B } ? B : never;
type DataOf<B> = B extends { data: infer D } ? D : never;
/** The body's fields beside `success` and `data`: `meta` of a list, the token fields of the token URL. */
type ExtraOf<B> = Omit<B, 'success' | 'data'>;
type ExtraArgs<B> = object extends ExtraOf<B> ? [] : [extra: ExtraOf<B>];

/**
 * What the helpers return: the reply R, typed as what an async handler may return, because that is
 * where TypeScript takes R from (the handler's `Handler<K>`). So `data` and the other fields are
 * checked against what the contract declares for that operation and status, excess fields included.
 */
type Returned<R> = R | PromiseLike<R>;

export function ok<R extends WireReply>(data: NoInfer<DataOf<BodyAt<R, 200>>>, ...extra: NoInfer<ExtraArgs<BodyAt<R, 200>>>): Returned<R> {
  return { status: 200, body: { success: true, data, ...extra[0] } } as unknown as R;
}

export function created<R extends WireReply>(data: NoInfer<DataOf<BodyAt<R, 201>>>): Returned<R> {
  return { status: 201, body: { success: true, data } } as unknown as R;
}

export function accepted<R extends WireReply>(data: NoInfer<DataOf<BodyAt<R, 202>>>): Returned<R> {
  return { status: 202, body: { success: true, data } } as unknown as R;
}

export function noContent<R extends WireReply & { status: 204 }>(): Returned<R> {
  return { status: 204 } as R;
}

/** A 302 to `location`: where a browser flow goes next. */
export function redirect<R extends WireReply & { status: 302 }>(location: string): Returned<R> {
  return { status: 302, headers: { Location: location } } as unknown as R;
}

/** The caller of a protected operation; the contract layer has authenticated it before the handler runs. */
export function signedIn(input: { principal: Principal | undefined }): Principal {
  if (!input.principal) throw new Unauthorized();
  return input.principal;
}
