import { useState } from 'preact/hooks';
import type { Schemas } from '../../../api';
import { checked } from './form-data';

type EventType = Schemas['WebhookEventType'];
type Subscription = Schemas['WebhookSubscription'];

/** Every event type of the contract, grouped for the form; a type the contract adds fails the type check here. */
const EVENT_GROUPS = {
  'user.created': 'People',
  'user.updated': 'People',
  'user.deleted': 'People',
  'user.restored': 'People',
  'user.email_verified': 'People',
  'user.password_changed': 'People',
  'user.mfa_enabled': 'People',
  'user.mfa_disabled': 'People',
  'user.identity_linked': 'People',
  'user.identity_unlinked': 'People',
  'session.created': 'Sessions',
  'session.revoked': 'Sessions',
  'organization.created': 'Organisations',
  'organization.updated': 'Organisations',
  'organization.deleted': 'Organisations',
  'organization.member_added': 'Organisations',
  'organization.member_removed': 'Organisations',
  'organization.role_changed': 'Organisations',
  'organization.domain_added': 'Organisations',
  'organization.domain_verified': 'Organisations',
  'organization.domain_removed': 'Organisations',
  'organization.sign_in_updated': 'Organisations',
  'organization.invitation_created': 'Organisations',
  'organization.invitation_accepted': 'Organisations',
  'organization.invitation_declined': 'Organisations',
  'organization.invitation_revoked': 'Organisations',
} as const satisfies Record<EventType, string>;

const GROUPS = ['People', 'Sessions', 'Organisations'] as const;
const EVENT_TYPES = Object.keys(EVENT_GROUPS) as EventType[];
/** How many event types one endpoint may name (the contract's `maxItems`); `*` has no such limit. */
export const MAX_EVENTS = 13;

/** The events an endpoint receives: every one (`*`, those added later included), or the ones ticked. */
export function EventFields(props: { events?: Subscription[] }) {
  const [every, setEvery] = useState(props.events?.includes('*') ?? true);
  return (
    <>
      <label class="check">
        <input type="checkbox" name="every_event" checked={every} onChange={(event) => setEvery(event.currentTarget.checked)} />
        <span>Every event, those added later included</span>
      </label>
      {GROUPS.map((group) => (
        <fieldset class="choices" disabled={every} key={group}>
          <legend>{every ? `${group} (every event is sent)` : group}</legend>
          {EVENT_TYPES.filter((type) => EVENT_GROUPS[type] === group).map((type) => (
            <label class="check" key={type}>
              <input type="checkbox" name="events" value={type} defaultChecked={props.events?.includes(type)} />
              <span class="mono">{type}</span>
            </label>
          ))}
        </fieldset>
      ))}
      {every ? null : <p class="field-hint">Up to {MAX_EVENTS} types; for more, send every event.</p>}
    </>
  );
}

/** The events a submitted `EventFields` form names, as the contract has them. */
export function eventsOf(data: FormData): Subscription[] {
  return data.get('every_event') === 'on' ? ['*'] : checked<EventType>(data, 'events');
}
