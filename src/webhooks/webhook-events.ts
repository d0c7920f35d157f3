import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/openapi.js';
import type { UnitOfWork } from '../db/transaction.js';
import { findUsersByIds } from '../users/user-repository.js';
import { findSubscribers, insertMessages, type NewWebhookMessageRow } from './webhook-repository.js';
import { userView } from '../users/user-view.js';

export type WebhookEventType = components['schemas']['WebhookEventType'];

/**
 * An event to report to the endpoints subscribed to it: about a user; for session events one or all
 * of their sessions (and the provider a new one was signed in with); for identity events the identity.
 */
export type WebhookEvent = UserWebhookEvent | OrganizationWebhookEvent;

export interface UserWebhookEvent {
  type: WebhookEventType;
  userId: number;
  session?: { id: string | null; all: boolean; provider?: string | null };
  identity?: { id: number; provider: string; subject: string };
  organization?: undefined;
}

/** An organisation's event: the organisation, and for a member's the member with their role. */
export interface OrganizationWebhookEvent {
  type: WebhookEventType;
  organization: { id: number; slug: string; name: string };
  member?: { userId: number; role: string; previousRole?: string };
  /** The domain events': the domain. */
  domain?: string;
  /** An invitation's events: the invitation. */
  invitation?: { id: string; email: string; role: string };
}

const userOf = (event: WebhookEvent): number | undefined => (event.organization ? event.member?.userId : event.userId);

/**
 * Writes a message per event, and a delivery of it per enabled endpoint subscribed to its type, in
 * the caller's unit of work: the events exist exactly when the change they report does. Each
 * payload carries the user as it is in this transaction, as an admin sees it. Nothing is written
 * when no endpoint wants the events, and the cost is then one query.
 */
export async function queueWebhookEvents(trx: UnitOfWork, events: readonly WebhookEvent[]): Promise<void> {
  if (events.length === 0) return;
  const endpoints = await findSubscribers(trx, [...new Set(events.map((event) => event.type))]);
  if (endpoints.length === 0) return;
  const userIds = events.map(userOf).filter((id) => id !== undefined);
  const users = new Map((await findUsersByIds(trx, [...new Set(userIds)])).map((user) => [user.id, user]));
  const timestamp = new Date().toISOString();
  const messages: NewWebhookMessageRow[] = [];
  const deliveries: { message_id: string; endpoint_id: number }[] = [];
  for (const event of events) {
    const subscribers = endpoints.filter((endpoint) => endpoint.events.includes('*') || endpoint.events.includes(event.type));
    if (subscribers.length === 0) continue;
    let data: unknown;
    if (event.organization) {
      const { organization, member, domain, invitation } = event;
      const user = member && users.get(member.userId);
      data = {
        organization,
        ...(domain !== undefined && { domain }),
        ...(member &&
          user && {
            member: {
              user: { id: user.id, email: user.email, name: user.name },
              role: member.role,
              ...(member.previousRole !== undefined && { previous_role: member.previousRole }),
            },
          }),
        ...(invitation && { invitation }),
      };
    } else {
      const user = users.get(event.userId);
      if (!user) continue;
      data = userEventData(event, userView(user, true));
    }
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    messages.push({ id, event_type: event.type, body: JSON.stringify({ type: event.type, timestamp, data }) });
    deliveries.push(...subscribers.map((endpoint) => ({ message_id: id, endpoint_id: endpoint.id })));
  }
  await insertMessages(trx, messages, deliveries);
  trx.queuedWebhooks.push(...messages.map((message) => message.id));
}

function userEventData(event: UserWebhookEvent, shown: ReturnType<typeof userView>): unknown {
  return event.session
    ? { session_id: event.session.id, all: event.session.all, ...sessionProvider(event), user: shown }
    : event.identity
      ? { identity: event.identity, user: shown }
      : shown;
}

/** `session.created` of a provider sign-in names the provider; the service's own credentials leave it out. */
function sessionProvider(event: UserWebhookEvent): { provider?: string } {
  const provider = event.session?.provider;
  return event.type === 'session.created' && provider ? { provider } : {};
}
