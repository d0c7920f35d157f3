import type { Response } from './app.js';

export function expectJson(res: Response): void {
  expect(res.headers['content-type']).toMatch(/^application\/json/);
}

/** The failure envelope with this status and code; `details` only on validation errors. */
export function expectError(res: Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  expectJson(res);
  if (code !== 'VALIDATION_ERROR') expect(res.body.error).not.toHaveProperty('details');
}

/** The 401 for a request without valid credentials: the exact envelope and the Bearer challenge. */
export function expectUnauthorized(res: Response): void {
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ success: false, error: { code: 'UNAUTHORIZED', message: 'Not authenticated' } });
  expect(res.headers['www-authenticate']).toBe('Bearer');
  expectJson(res);
}
