import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { startTestApp, uniqueEmail, type RegisteredUser, type Response, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { claimsOf } from './support/jwt.js';

/*
 * Requests that race each other on one record. PostgreSQL runs them truly in parallel (READ
 * COMMITTED); the embedded database serializes them. Either way the answers and the rows must
 * agree with the contract: one winner, documented losers, never a 500.
 */

let t: TestContext;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.adminToken();
}, 60_000);
afterAll(() => t.close());

const PASSWORD = 'Quartz-Lantern-4821';
const CONFLICT = { success: false, error: { code: 'CONFLICT', message: expect.any(String) } };

const statusesOf = (responses: Response[]) => responses.map((res) => res.status);
const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

function expectNoServerError(responses: Response[]): void {
  const failures = responses.filter((res) => res.status >= 500).map((res) => ({ status: res.status, body: res.body }));
  expect(failures).toEqual([]);
}

/** Fires every request at once and waits for all of them. */
function together<T>(count: number, request: (i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => request(i)));
}

async function usersWithEmail(email: string): Promise<number> {
  const row = await t.db
    .selectFrom('users')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  return row.n;
}

const refresh = (token: string) => t.post('/api/auth/refresh', { refresh_token: token });
const sessionRow = (sid: string) => t.db.selectFrom('sessions').selectAll().where('id', '=', sid).executeTakeFirstOrThrow();

describe('one e-mail registered many times at once', () => {
  it('creates exactly one account: one 201, every other answer 409 CONFLICT', async () => {
    const email = uniqueEmail('race');
    // The same address as clients send it: case and surrounding blanks differ, the account is one.
    const spellings = [email, email.toUpperCase(), `  ${email}  `, email.replace(/^./, (c) => c.toUpperCase())];
    const responses = await together(25, (i) =>
      t.post('/api/auth/register', { email: spellings[i % spellings.length], password: PASSWORD, name: `Racer ${i}` }),
    );
    expectNoServerError(responses);
    const statuses = statusesOf(responses);
    expect(count(statuses, 201)).toBe(1);
    expect(count(statuses, 409)).toBe(24);
    for (const res of responses.filter((r) => r.status === 409)) expect(res.body).toEqual(CONFLICT);
    expect(await usersWithEmail(email)).toBe(1);

    // The winner's session works; the account logs in with its password.
    const winner = responses.find((r) => r.status === 201)!;
    expect(winner.body.data.user.email).toBe(email);
    expect((await t.get('/api/auth/me', { token: winner.body.data.access_token })).status).toBe(200);
    expect((await t.post('/api/auth/login/json', { email, password: PASSWORD })).status).toBe(200);
    // Only the winner opened a session.
    const sessions = await t.db.selectFrom('sessions').select('id').where('user_id', '=', winner.body.data.user.id).execute();
    expect(sessions).toHaveLength(2);
  });

  it('lets registration and admin creation of one e-mail race: one 201, the rest 409', async () => {
    const email = uniqueEmail('mixed');
    const responses = await together(12, (i) =>
      i % 2 === 0
        ? t.post('/api/auth/register', { email, password: PASSWORD, name: `Self ${i}` })
        : t.post('/api/users', { email, password: PASSWORD, name: `Created ${i}` }, { token: admin }),
    );
    expectNoServerError(responses);
    const statuses = statusesOf(responses);
    expect(count(statuses, 201)).toBe(1);
    expect(count(statuses, 409)).toBe(11);
    expect(await usersWithEmail(email)).toBe(1);
  });

  it('lets several users take one new e-mail at once: one 200, the rest 409, one owner', async () => {
    const email = uniqueEmail('wanted');
    const users = await together(6, () => t.register({ password: PASSWORD }));
    // Made by an admin, whose change applies at once; a user's own new e-mail waits for its link
    // (the race on following those links is in test/credentials.test.ts).
    const admin = await t.adminToken();
    const responses = await together(users.length, (i) => t.put(`/api/users/${users[i].id}`, { email }, { token: admin }));
    expectNoServerError(responses);
    const statuses = statusesOf(responses);
    expect(count(statuses, 200)).toBe(1);
    expect(count(statuses, 409)).toBe(users.length - 1);
    expect(await usersWithEmail(email)).toBe(1);
    const owner = users[statuses.indexOf(200)];
    expect((await t.get(`/api/users/${owner.id}`, { token: owner.access })).body.data.email).toBe(email);
    // The losers keep their own addresses.
    for (const [i, user] of users.entries()) {
      if (statuses[i] === 200) continue;
      expect((await t.get(`/api/users/${user.id}`, { token: user.access })).body.data.email).toBe(user.email);
    }
  });
});

describe('one refresh token presented by several clients at once', () => {
  const BURST = 5;

  async function burst(user: RegisteredUser): Promise<Response[]> {
    const responses = await together(BURST, () => refresh(user.refresh));
    expectNoServerError(responses);
    return responses;
  }

  it('answers every refresh within the grace period with 200 and keeps the session', async () => {
    const user = await t.register({ password: PASSWORD });
    const sid = claimsOf(user.refresh).sid;
    const responses = await burst(user);
    expect(statusesOf(responses)).toEqual(Array(BURST).fill(200));

    const refreshTokens = responses.map((res) => res.body.data.refresh_token as string);
    const accessTokens = responses.map((res) => res.body.data.access_token as string);
    // One rotation: every answer carries the refresh token it made, each with an access token of its own.
    expect(new Set(refreshTokens).size).toBe(1);
    expect(new Set(accessTokens).size).toBe(BURST);
    expect(refreshTokens).not.toContain(user.refresh);
    expect(createHash('sha256').update(refreshTokens[0]).digest('hex')).toBe((await sessionRow(sid)).refresh_token_hash);
    for (const token of [...refreshTokens, ...accessTokens]) expect(claimsOf(token).sid).toBe(sid);

    const session = await sessionRow(sid);
    expect(session.revoked_at).toBeNull();
    for (const token of accessTokens) {
      const me = await t.get('/api/auth/me', { token });
      expect(me.status).toBe(200);
      expect(me.body.data.id).toBe(user.id);
    }
    const listed = await t.get('/api/auth/sessions', { token: accessTokens[0] });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([sid]);
    // The access token from before the burst still works too: nothing was revoked.
    expect((await t.get('/api/auth/me', { token: user.access })).status).toBe(200);
  });

  it('leaves whichever answer a client keeps usable: each token of a burst refreshes again', async () => {
    // One burst per answer position: after it, the client keeps that answer's token and refreshes
    // with it. The contract: the token an answer carries stays valid until the next rotation.
    for (let keep = 0; keep < BURST; keep++) {
      const user = await t.register({ password: PASSWORD });
      const sid = claimsOf(user.refresh).sid;
      const responses = await burst(user);
      expect(statusesOf(responses)).toEqual(Array(BURST).fill(200));

      const kept = responses[keep].body.data.refresh_token as string;
      const next = await refresh(kept);
      expect({ keep, status: next.status, body: next.status === 200 ? 'ok' : next.body }).toEqual({ keep, status: 200, body: 'ok' });
      expect((await sessionRow(sid)).revoked_at).toBeNull();

      // The token that answer carries rotates in turn, and the session goes on.
      const after = await refresh(next.body.data.refresh_token);
      expect(after.status).toBe(200);
      expect((await t.get('/api/auth/me', { token: after.body.data.access_token })).status).toBe(200);
    }
  });

  it('accepts the kept token in a second burst too: bursts of bursts keep the session alive', async () => {
    const user = await t.register({ password: PASSWORD });
    const sid = claimsOf(user.refresh).sid;
    let current = user.refresh;
    for (let round = 0; round < 3; round++) {
      const responses = await together(BURST, () => refresh(current));
      expectNoServerError(responses);
      expect(statusesOf(responses)).toEqual(Array(BURST).fill(200));
      // A different answer position each round.
      current = responses[(round * 2 + 1) % BURST].body.data.refresh_token;
    }
    expect((await sessionRow(sid)).revoked_at).toBeNull();
    expect((await refresh(current)).status).toBe(200);
  });

  it('keeps the session of two tabs that refresh together round after round, each going on with what it got', async () => {
    const user = await t.register({ password: PASSWORD });
    const sid = claimsOf(user.refresh).sid;
    let tabs = [user.refresh, user.refresh];
    const seen: string[] = [user.refresh];
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(tabs.map((token) => refresh(token)));
      expectNoServerError(answers);
      expect({ round, statuses: statusesOf(answers) }).toEqual({ round, statuses: [200, 200] });
      tabs = answers.map((res) => res.body.data.refresh_token as string);
      // One rotation a round: the answer that lost the race carries the token the winner's made.
      expect(tabs[1]).toBe(tabs[0]);
      expect(seen).not.toContain(tabs[0]);
      seen.push(tabs[0]);
      for (const res of answers) expect((await t.get('/api/auth/me', { token: res.body.data.access_token })).status).toBe(200);
    }
    expect((await sessionRow(sid)).revoked_at).toBeNull();
    expect(await auditRows(t, user.id, 'session.refresh_reuse_detected')).toEqual([]);
    expect(await auditRows(t, user.id, 'session.refreshed')).toHaveLength(10);

    // A token replaced more than the grace period ago is still taken for a stolen one.
    await t.db
      .updateTable('sessions')
      .set({ rotated_at: new Date(Date.now() - 3600_000) })
      .where('id', '=', sid)
      .execute();
    const replay = await refresh(seen[seen.length - 2]);
    expect(replay.status).toBe(401);
    expect(replay.body.error.code).toBe('UNAUTHORIZED');
    expect((await sessionRow(sid)).revoked_at).not.toBeNull();
    expect(await auditRows(t, user.id, 'session.refresh_reuse_detected')).toHaveLength(1);
    expect((await refresh(tabs[0])).status).toBe(401);
  });

  it('answers a flood of simultaneous refreshes with 200 or 401 only, and a 401 leaves the session revoked', async () => {
    const user = await t.register({ password: PASSWORD });
    const sid = claimsOf(user.refresh).sid;
    const responses = await together(24, () => refresh(user.refresh));
    expectNoServerError(responses);
    const statuses = statusesOf(responses);
    expect(statuses.filter((s) => s !== 200 && s !== 401)).toEqual([]);
    expect(count(statuses, 200)).toBeGreaterThanOrEqual(BURST);
    const revoked = (await sessionRow(sid)).revoked_at !== null;
    expect(revoked).toBe(statuses.includes(401));
    const me = await t.get('/api/auth/me', { token: user.access });
    expect(me.status).toBe(revoked ? 401 : 200);
  });

  it('still revokes the session when the replaced token comes back after the grace period', async () => {
    const user = await t.register({ password: PASSWORD });
    const sid = claimsOf(user.refresh).sid;
    const responses = await burst(user);
    expect(statusesOf(responses)).toEqual(Array(BURST).fill(200));
    // Let the grace period pass without waiting for it.
    await t.db
      .updateTable('sessions')
      .set({ rotated_at: new Date(Date.now() - 3600_000) })
      .where('id', '=', sid)
      .execute();

    const reuse = await refresh(user.refresh);
    expect(reuse.status).toBe(401);
    expect(reuse.body.error.code).toBe('UNAUTHORIZED');
    expect((await sessionRow(sid)).revoked_at).not.toBeNull();
    for (const res of responses) {
      expect((await refresh(res.body.data.refresh_token)).status).toBe(401);
      expect((await t.get('/api/auth/me', { token: res.body.data.access_token })).status).toBe(401);
    }
  });

  it('answers a stolen replaced token racing past the grace period with 401 and never a 500', async () => {
    const user = await t.register({ password: PASSWORD });
    const sid = claimsOf(user.refresh).sid;
    expect((await refresh(user.refresh)).status).toBe(200);
    await t.db
      .updateTable('sessions')
      .set({ rotated_at: new Date(Date.now() - 3600_000) })
      .where('id', '=', sid)
      .execute();
    const responses = await together(BURST, () => refresh(user.refresh));
    expectNoServerError(responses);
    expect(statusesOf(responses)).toEqual(Array(BURST).fill(401));
    expect((await sessionRow(sid)).revoked_at).not.toBeNull();
  });
});

describe('one user deleted and restored at once', () => {
  const ROUNDS = 6;

  /** What every view of the user says: the row, GET by id, the lists. */
  async function observedState(id: number): Promise<'deleted' | 'live'> {
    const row = await t.db.selectFrom('users').select('deleted_at').where('id', '=', id).executeTakeFirstOrThrow();
    const get = await t.get(`/api/users/${id}`, { token: admin });
    const deletedList = await t.get(`/api/users?status=deleted&cursor=${id - 1}&limit=1`, { token: admin });
    const liveList = await t.get(`/api/users?cursor=${id - 1}&limit=1`, { token: admin });
    expect([get.status, deletedList.status, liveList.status]).toEqual([expect.any(Number), 200, 200]);
    const inDeleted = deletedList.body.data.some((u: { id: number }) => u.id === id);
    const inLive = liveList.body.data.some((u: { id: number }) => u.id === id);

    if (row.deleted_at === null) {
      expect({ get: get.status, inDeleted, inLive }).toEqual({ get: 200, inDeleted: false, inLive: true });
      expect(get.body.data.deleted_at).toBeNull();
      return 'live';
    }
    expect({ get: get.status, inDeleted, inLive }).toEqual({ get: 404, inDeleted: true, inLive: false });
    const listed = deletedList.body.data.find((u: { id: number }) => u.id === id);
    expect(new Date(listed.deleted_at).getTime()).toBe(row.deleted_at.getTime());
    return 'deleted';
  }

  it('answers only 204/404 for delete and 200/409 for restore, and every view agrees afterwards', async () => {
    const user = await t.register({ password: PASSWORD });
    const seen = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      // Start from either state: live on even rounds, deleted on odd ones.
      const before = await observedState(user.id);
      const want = round % 2 === 0 ? 'live' : 'deleted';
      if (before !== want) {
        const res =
          want === 'live'
            ? await t.post(`/api/users/${user.id}/restore`, undefined, { token: admin })
            : await t.delete(`/api/users/${user.id}`, { token: admin });
        expect(res.status).toBe(want === 'live' ? 200 : 204);
      }

      const responses = await together(8, (i) =>
        i % 2 === 0
          ? t.delete(`/api/users/${user.id}`, { token: admin })
          : t.post(`/api/users/${user.id}/restore`, undefined, { token: admin }),
      );
      expectNoServerError(responses);
      const deletes = responses.filter((_, i) => i % 2 === 0).map((res) => res.status);
      const restores = responses.filter((_, i) => i % 2 === 1).map((res) => res.status);
      expect(deletes.filter((s) => s !== 204 && s !== 404)).toEqual([]);
      expect(restores.filter((s) => s !== 200 && s !== 409)).toEqual([]);
      for (const res of responses) {
        if (res.status === 404) expect(res.body.error.code).toBe('NOT_FOUND');
        if (res.status === 409) expect(res.body.error.code).toBe('CONFLICT');
        if (res.status === 200) expect(res.body.data.deleted_at).toBeNull();
      }
      seen.add(`${deletes.join(',')}|${restores.join(',')}`);

      const after = await observedState(user.id);
      // Each success flips the state once, so the final state follows from the count of each.
      const flips = count(deletes, 204) + count(restores, 200);
      const expected = flips % 2 === 0 ? want : want === 'live' ? 'deleted' : 'live';
      expect({ round, after }).toEqual({ round, after: expected });
    }
    expect(seen.size).toBeGreaterThan(0);
  });

  it('lets exactly one of several simultaneous deletes win, and exactly one restore', async () => {
    const user = await t.register({ password: PASSWORD });
    const deletes = await together(6, () => t.delete(`/api/users/${user.id}`, { token: admin }));
    expectNoServerError(deletes);
    expect(statusesOf(deletes).sort()).toEqual([204, 404, 404, 404, 404, 404]);
    expect(await observedState(user.id)).toBe('deleted');
    // Every session of the user went with the delete.
    expect((await t.get('/api/auth/me', { token: user.access })).status).toBe(401);

    const restores = await together(6, () => t.post(`/api/users/${user.id}/restore`, undefined, { token: admin }));
    expectNoServerError(restores);
    expect(statusesOf(restores).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect(await observedState(user.id)).toBe('live');
    expect((await t.post('/api/auth/login/json', { email: user.email, password: PASSWORD })).status).toBe(200);
  });

  it('lets a user deleting themselves race an admin restoring them without a 500', async () => {
    for (let round = 0; round < 3; round++) {
      const user = await t.register({ password: PASSWORD });
      const responses = await Promise.all([
        t.delete(`/api/users/${user.id}`, { token: user.access }),
        t.post(`/api/users/${user.id}/restore`, undefined, { token: admin }),
        t.delete(`/api/users/${user.id}`, { token: admin }),
        t.post(`/api/users/${user.id}/restore`, undefined, { token: admin }),
      ]);
      expectNoServerError(responses);
      // The user's own delete may also lose its session to the admin's delete first: 401 then.
      expect([204, 404, 401]).toContain(responses[0].status);
      expect([200, 409]).toContain(responses[1].status);
      expect([204, 404]).toContain(responses[2].status);
      expect([200, 409]).toContain(responses[3].status);
      await observedState(user.id);
    }
  });
});
