import { startTestApp, type TestContext } from './support/app.js';

// A real bcrypt cost, so that the hashing dominates and a missing dummy check would show.
const COST = '11';
const ROUNDS = 11;

let t: TestContext;
beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: COST });
});
afterAll(() => t.close());

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function timed(body: Record<string, string>): Promise<number> {
  const started = process.hrtime.bigint();
  const res = await t.post('/api/auth/login/json', body);
  const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ success: false, error: { code: 'INVALID_CREDENTIALS', message: 'Invalid email or password' } });
  return elapsedMs;
}

describe('login timing', () => {
  it('takes as long for an unknown e-mail as for a wrong password (medians within 25%)', async () => {
    const user = await t.register({ password: 'the-right-password-9' });
    // Warm both paths once before measuring.
    await timed({ email: user.email, password: 'a-wrong-password-1' });
    await timed({ email: 'nobody-here@example.com', password: 'a-wrong-password-1' });

    const known: number[] = [];
    const unknown: number[] = [];
    // Interleaved, so that whatever else the machine does weighs on both alike.
    for (let i = 0; i < ROUNDS; i++) {
      known.push(await timed({ email: user.email, password: `a-wrong-password-${i}` }));
      unknown.push(await timed({ email: `nobody-${i}@example.com`, password: `a-wrong-password-${i}` }));
    }
    const [a, b] = [median(known), median(unknown)];
    expect(Math.abs(a - b) / Math.max(a, b)).toBeLessThan(0.25);
  });

  it('spends the same work on a password over 72 bytes', async () => {
    const user = await t.register({ password: 'the-right-password-9' });
    const known: number[] = [];
    const tooLong: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      known.push(await timed({ email: user.email, password: `a-wrong-password-${i}` }));
      tooLong.push(await timed({ email: user.email, password: 'x'.repeat(80 + i) }));
    }
    const [a, b] = [median(known), median(tooLong)];
    expect(Math.abs(a - b) / Math.max(a, b)).toBeLessThan(0.25);
  });
});
