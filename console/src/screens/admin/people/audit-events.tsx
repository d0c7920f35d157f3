import { Link } from 'wouter-preact';
import { api, ok, type Schemas } from '../../../api';
import { CursorTable, useCursorList } from '../../../ui/list';
import { When } from '../../../ui/kit';
import type { AuditEventType } from './event-types';
import './audit-events.css';
import './people.css';

type AuditEvent = Schemas['AuditEvent'];

/** What the audit log is narrowed to; every field optional, as the API takes them. */
export interface AuditFilter {
  user_id?: number;
  event_type?: AuditEventType;
  since?: string;
  until?: string;
}

/** A user the event names, linked to their screen; "—" for none. */
function UserLink(props: { id: number | null }) {
  if (props.id === null) return <span>—</span>;
  return <Link href={`/users/${props.id}`}>#{props.id}</Link>;
}

/** An event's details as readable JSON, folded until asked for. */
function EventDetails(props: { event: AuditEvent }) {
  const { event } = props;
  const facts = { ...event.details, ip: event.ip, user_agent: event.user_agent, request_id: event.request_id };
  const names = Object.keys(event.details);
  return (
    <details class="event-details">
      <summary>
        {names.length > 0 ? names.join(', ') : 'Request'}
        <span class="visually-hidden"> of event {event.id}</span>
      </summary>
      <pre>{JSON.stringify(facts, null, 2)}</pre>
    </details>
  );
}

/**
 * The audit events that match `filter`, oldest first as the API answers them, a page at a time;
 * each row links the users it names and unfolds its details. A new `round` reads the list again.
 */
export function AuditEvents(props: { filter: AuditFilter; caption: string; empty: string; round?: number }) {
  const { filter } = props;
  const list = useCursorList(
    (cursor) => ok(api.GET('/api/audit-events', { params: { query: { ...filter, cursor, limit: 50 } } })),
    [filter.user_id, filter.event_type, filter.since, filter.until, props.round],
  );
  return (
    <CursorTable
      caption={props.caption}
      list={list}
      head={['When', 'Event', 'Actor', 'Subject', 'Details']}
      empty={props.empty}
      row={(event) => (
        <tr key={event.id}>
          <td>
            <When at={event.occurred_at} />
          </td>
          <td>
            <code>{event.event_type}</code>
          </td>
          <td>
            <UserLink id={event.actor_user_id} />
          </td>
          <td>
            <UserLink id={event.subject_user_id} />
          </td>
          <td>
            <EventDetails event={event} />
          </td>
        </tr>
      )}
    />
  );
}
