import type { Response } from './app';

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
