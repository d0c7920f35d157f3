import { useState } from 'preact/hooks';
import { useSearchParams } from 'wouter-preact';
import { Button, Field, Page } from '../../ui/kit';
import { AuditEvents, type AuditFilter } from './people/audit-events';
import { AUDIT_EVENT_TYPES, isAuditEventType } from './people/event-types';
import { textOf } from './people/form';
import { DAY_MS, isoOfLocalInput, localInputValue } from './people/time';
import './audit.css';

/**
 * The filter the address holds, so that a view of the log can be bookmarked or shared. Without
 * `since` in the address the log starts 24 hours ago (it reads oldest first); `since=` (empty)
 * reads it from the beginning.
 */
function filterOf(params: URLSearchParams, dayAgo: string): AuditFilter {
  const userId = Number(params.get('user_id'));
  const type = params.get('event_type') ?? '';
  const since = params.has('since') ? params.get('since') || undefined : dayAgo;
  return {
    user_id: Number.isInteger(userId) && userId > 0 ? userId : undefined,
    event_type: isAuditEventType(type) ? type : undefined,
    since,
    until: params.get('until') || undefined,
  };
}

export function Audit() {
  const [params, setParams] = useSearchParams();
  // Fixed when the screen opens: a default that moved with every render would reload the list each time.
  const [dayAgo] = useState(() => new Date(Date.now() - DAY_MS).toISOString());
  const filter = filterOf(params, dayAgo);
  const apply = (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const next = new URLSearchParams();
    const userId = textOf(form, 'user_id').trim();
    if (userId) next.set('user_id', userId);
    const type = textOf(form, 'event_type');
    if (type) next.set('event_type', type);
    next.set('since', isoOfLocalInput(textOf(form, 'since')) ?? '');
    const until = isoOfLocalInput(textOf(form, 'until'));
    if (until) next.set('until', until);
    setParams(next);
  };
  // The form is keyed by the filter, so that its fields show what the address says after a navigation.
  const key = JSON.stringify(filter);
  return (
    <Page title="Audit log">
      <p>
        Sign-ins, sign-outs, and changes to accounts and settings, oldest first. Narrow the log with a user, an event type or a time range;
        the address keeps the filter.
      </p>
      <form key={key} class="toolbar audit-filter" role="search" aria-label="Filter the audit log" onSubmit={apply}>
        <Field label="User id">
          <input name="user_id" type="number" min={1} inputMode="numeric" defaultValue={filter.user_id?.toString() ?? ''} />
        </Field>
        <Field label="Event type">
          <select name="event_type" defaultValue={filter.event_type ?? ''}>
            <option value="">Any event</option>
            {AUDIT_EVENT_TYPES.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Since">
          <input name="since" type="datetime-local" defaultValue={localInputValue(filter.since ? new Date(filter.since) : undefined)} />
        </Field>
        <Field label="Until">
          <input name="until" type="datetime-local" defaultValue={localInputValue(filter.until ? new Date(filter.until) : undefined)} />
        </Field>
        <div class="form-actions">
          <button type="submit" class="button primary">
            Show events
          </button>
          <Button onClick={() => setParams(new URLSearchParams({ since: '' }))}>Whole log</Button>
        </div>
      </form>
      <AuditEvents
        filter={filter}
        caption="Audit events"
        empty="No event matches this filter. Widen the time range, or choose another user or event type."
      />
    </Page>
  );
}
