import { sql } from 'kysely';
import type { Executor } from '../db/types.js';

/** What a device's poll of its device code found: whether it came too soon, and the interval it must keep from now on. */
export interface DevicePoll {
  tooSoon: boolean;
  intervalSeconds: number;
}

/**
 * Records a device's poll of the token endpoint with one of its device codes, and says whether it came
 * sooner than the code's interval after the last one; such a poll adds `stepSeconds` to the interval,
 * for it and every later poll (RFC 8628 §3.5). Polls of one code are counted one after the other
 * (the row is locked), whichever process answers them. Undefined for a code the client does not hold.
 */
export async function recordDevicePoll(
  db: Executor,
  poll: { deviceCode: string; clientId: string; intervalSeconds: number; stepSeconds: number },
): Promise<DevicePoll | undefined> {
  const { rows } = await sql<{ too_soon: boolean | null; interval_seconds: number }>`
    with previous as (
      select polled_at, coalesce(poll_interval_seconds, ${poll.intervalSeconds}::int) as interval_seconds,
             polled_at > now() - make_interval(secs => coalesce(poll_interval_seconds, ${poll.intervalSeconds}::int)) as too_soon
      from oidc_records
      where model = 'DeviceCode' and id = ${poll.deviceCode} and client_id = ${poll.clientId}
      for update
    )
    update oidc_records r
    set polled_at = now(),
        poll_interval_seconds = case when p.too_soon then p.interval_seconds + ${poll.stepSeconds}::int else p.interval_seconds end
    from previous p
    where r.model = 'DeviceCode' and r.id = ${poll.deviceCode}
    returning p.too_soon, r.poll_interval_seconds as interval_seconds`.execute(db);
  const row = rows[0];
  return row && { tooSoon: row.too_soon === true, intervalSeconds: row.interval_seconds };
}
