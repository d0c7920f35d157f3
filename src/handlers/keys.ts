import { keyRingFor } from '../services/keys';
import type { Handler } from './types';

/** The bare JWK Set, not the envelope: what JWT libraries read from a JWKS URL. */
export const getJwks: Handler<'getJwks'> = async (_input, { config }) => ({ status: 200, body: keyRingFor(config).jwks });
