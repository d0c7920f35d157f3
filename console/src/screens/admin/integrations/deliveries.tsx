import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../../../api';
import { CursorTable, useCursorList } from '../../../ui/list';
import { Busy, Button, ErrorMessage, Field, Notice, When } from '../../../ui/kit';

type Delivery = Schemas['WebhookDelivery'];
type Status = Schemas['WebhookDeliveryStatus'];

/** How often, and how many times, a replayed delivery is looked at until its attempt shows. */
const POLL_INTERVAL_MS = 1000;
const MAX_POLLS = 30;

const STATUS_LABELS: Record<Status, string> = { pending: 'Pending', delivered: 'Delivered', failed: 'Failed' };

/** One delivery as the log has it now: the page after the one before it holds just it. */
async function readDelivery(webhookId: number, deliveryId: number): Promise<Delivery | undefined> {
  const page = await ok(
    api.GET('/api/webhooks/{id}/deliveries', { params: { path: { id: webhookId }, query: { cursor: deliveryId - 1, limit: 1 } } }),
  );
  return page.data.find((delivery) => delivery.id === deliveryId);
}

/** What became of a replay, said to the person: good news, bad news, or the API's refusal. */
type Said = { text: string; good: boolean } | { error: unknown };

function outcome(delivery: Delivery): Said {
  const answer = delivery.last_status_code === null ? (delivery.last_error ?? 'no answer') : `HTTP ${delivery.last_status_code}`;
  if (delivery.status === 'delivered')
    return { text: `Delivery ${delivery.id} was delivered: the endpoint answered ${answer}.`, good: true };
  if (delivery.status === 'failed')
    return {
      text: `Delivery ${delivery.id} failed again (${delivery.last_error ?? answer}). Fix the endpoint, then replay it.`,
      good: false,
    };
  const next = delivery.next_attempt_at ? ` at ${new Date(delivery.next_attempt_at).toLocaleString()}` : '';
  return {
    text: `The attempt of delivery ${delivery.id} failed (${delivery.last_error ?? answer}); the service tries again${next}.`,
    good: false,
  };
}

/**
 * The delivery log of one endpoint, filtered by status and paged; each delivery can be replayed, and
 * the replay is followed until its attempt shows in the log.
 */
export function Deliveries(props: { webhookId: number }) {
  const [status, setStatus] = useState<Status | ''>('');
  const list = useCursorList(
    (cursor) =>
      ok(
        api.GET('/api/webhooks/{id}/deliveries', {
          params: { path: { id: props.webhookId }, query: { cursor, status: status === '' ? undefined : status } },
        }),
      ),
    [props.webhookId, status],
  );
  // Deliveries as a replay last read them, over the list as it was loaded.
  const [latest, setLatest] = useState<Record<number, Delivery>>({});
  const [said, setSaid] = useState<Said>();

  return (
    <div class="replay">
      <div class="toolbar">
        <Field label="Status">
          <select value={status} onChange={(event) => setStatus(event.currentTarget.value as Status | '')}>
            <option value="">Every status</option>
            <option value="pending">Pending</option>
            <option value="delivered">Delivered</option>
            <option value="failed">Failed</option>
          </select>
        </Field>
        <Button
          onClick={() => {
            setLatest({});
            list.reload();
          }}
        >
          Refresh
        </Button>
      </div>
      {said === undefined ? null : 'error' in said ? (
        <ErrorMessage error={said.error} />
      ) : said.good ? (
        <Notice>{said.text}</Notice>
      ) : (
        <p class="warning" role="status">
          {said.text}
        </p>
      )}
      <CursorTable
        caption="Deliveries, oldest first"
        list={list}
        head={['Delivery', 'Event', 'Status', 'Attempts', 'Last answer', 'Created', 'Actions']}
        empty={
          status === ''
            ? 'Nothing was sent to this endpoint yet: deliveries appear here when one of its events happens.'
            : `No ${STATUS_LABELS[status].toLowerCase()} delivery: choose another status to see the others.`
        }
        row={(loaded) => {
          const delivery = latest[loaded.id] ?? loaded;
          return (
            <tr key={delivery.id}>
              <td class="mono">{delivery.id}</td>
              <td class="mono">{delivery.event_type}</td>
              <td>
                <span class={`badge ${delivery.status === 'delivered' ? 'ok' : delivery.status === 'failed' ? 'off' : ''}`}>
                  {STATUS_LABELS[delivery.status]}
                </span>
                {delivery.status === 'pending' && delivery.next_attempt_at ? (
                  <>
                    {' '}
                    next <When at={delivery.next_attempt_at} />
                  </>
                ) : null}
              </td>
              <td>
                <AttemptLog delivery={delivery} />
              </td>
              <td>
                {delivery.last_status_code ?? '—'}
                {delivery.last_error ? <span class="field-hint"> {delivery.last_error}</span> : null}
              </td>
              <td>
                <When at={delivery.created_at} />
              </td>
              <td>
                <ReplayButton
                  webhookId={props.webhookId}
                  delivery={delivery}
                  onState={(now) => setLatest((previous) => ({ ...previous, [now.id]: now }))}
                  onSettled={setSaid}
                />
              </td>
            </tr>
          );
        }}
      />
    </div>
  );
}

function AttemptLog(props: { delivery: Delivery }) {
  const { delivery } = props;
  if (delivery.attempt_log.length === 0) return <span>{delivery.attempts}</span>;
  return (
    <details>
      <summary aria-label={`${delivery.attempts} attempts of delivery ${delivery.id}`}>{delivery.attempts}</summary>
      <ol class="attempts">
        {delivery.attempt_log.map((attempt) => (
          <li key={attempt.attempted_at}>
            <When at={attempt.attempted_at} />: {attempt.status_code === null ? 'no answer' : `HTTP ${attempt.status_code}`}
            {attempt.error ? ` (${attempt.error})` : ''}, {attempt.duration_ms} ms
          </li>
        ))}
      </ol>
    </details>
  );
}

/**
 * Replays a delivery (it becomes due now), then reads it until its new attempt shows, a bounded
 * number of times, showing progress meanwhile.
 */
function ReplayButton(props: {
  webhookId: number;
  delivery: Delivery;
  onState: (delivery: Delivery) => void;
  onSettled: (said: Said) => void;
}) {
  const [busy, setBusy] = useState(false);
  const mounted = useRef(true);
  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );
  const { delivery } = props;

  const replay = async () => {
    setBusy(true);
    try {
      const started = (
        await ok(
          api.POST('/api/webhooks/{id}/deliveries/{delivery_id}/retry', {
            params: { path: { id: props.webhookId, delivery_id: delivery.id } },
          }),
        )
      ).data;
      props.onState(started);
      for (let poll = 1; poll <= MAX_POLLS && mounted.current; poll++) {
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
        if (!mounted.current) return;
        const now = await readDelivery(props.webhookId, delivery.id);
        if (!now) {
          props.onSettled({ text: `Delivery ${delivery.id} is no longer in the log.`, good: false });
          return;
        }
        if (now.attempts > started.attempts || now.status !== 'pending') {
          props.onState(now);
          props.onSettled(outcome(now));
          return;
        }
      }
      props.onSettled({
        text: `Delivery ${delivery.id} is due now but was not attempted within ${(MAX_POLLS * POLL_INTERVAL_MS) / 1000} seconds; refresh the log later.`,
        good: false,
      });
    } catch (failure) {
      props.onSettled({ error: failure });
    } finally {
      if (mounted.current) setBusy(false);
    }
  };

  return busy ? (
    <Busy label={`Replaying delivery ${delivery.id}…`} />
  ) : (
    <Button aria-label={`Replay delivery ${delivery.id}`} onClick={() => void replay()}>
      Replay
    </Button>
  );
}
