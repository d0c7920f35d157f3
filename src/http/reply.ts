import type { Reply } from '../handlers/types';
import { unauthorized } from './errors';
import type { Principal } from '../services/principal';

export const ok = (data: unknown, extra?: Record<string, unknown>): Reply => ({ status: 200, body: { success: true, data, ...extra } });
export const created = (data: unknown): Reply => ({ status: 201, body: { success: true, data } });
export const noContent = (): Reply => ({ status: 204 });

/** The caller of a protected operation; the security handler guarantees one is there. */
export function signedIn(input: { principal: Principal | undefined }): Principal {
  if (!input.principal) throw unauthorized();
  return input.principal;
}
