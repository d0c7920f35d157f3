import type { Handler } from './types.js';

/**
 * The bare JWK Set, not the envelope: what JWT libraries read from a JWKS URL. Verifiers may keep it
 * for five minutes, so a key is published that long before it signs.
 */
export const getJwks: Handler<'getJwks'> = async (_input, { jwks }) => ({
  status: 200,
  body: await jwks(),
  headers: { 'Cache-Control': 'public, max-age=300' },
});
