import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, ok, type Schemas } from '../../api';
import { ConfirmButton, Field, Form, Loading, Notice, Page, Section, When, useLoad } from '../../ui/kit';
import { CursorTable, useCursorList } from '../../ui/list';
import { Deliveries } from './integrations/deliveries';
import { EventFields, eventsOf } from './integrations/event-fields';
import { isOn, sameSet, text } from './integrations/form-data';
import { selectionHref, useSelection } from './integrations/selection';
import { EnabledBadge, SettingsForm, Timestamps } from './integrations/settings';
import { ShownOnce, useForgetOnLeaving } from './integrations/shown-once';
import './integrations/integrations.css';

type Webhook = Schemas['WebhookEndpoint'];

/** A signing secret the service just made: kept in this page's memory only, until dismissed. */
interface FreshSecret {
  webhookId: number;
  secret: string;
  rotated: boolean;
}

/**
 * The endpoints that receive the service's events: the list and registration at /console/webhooks,
 * one endpoint with its deliveries at /console/webhooks?webhook={id}.
 */
export function Webhooks() {
  const [selected, open] = useSelection('webhook');
  const [fresh, setFresh] = useState<FreshSecret>();
  const [notice, setNotice] = useState<string>();
  const id = selected === undefined ? undefined : Number(selected);
  if (id !== undefined && Number.isInteger(id) && id > 0)
    return (
      <WebhookDetail
        id={id}
        fresh={fresh?.webhookId === id ? fresh : undefined}
        onSecret={setFresh}
        onDeleted={(url) => {
          setFresh(undefined);
          setNotice(`The endpoint ${url} was deleted with its deliveries; nothing more is sent to it.`);
          open(undefined);
        }}
      />
    );
  return (
    <WebhookList
      notice={notice}
      onCreated={(webhook) => {
        setNotice(undefined);
        setFresh({ webhookId: webhook.id, secret: webhook.secret, rotated: false });
        open(String(webhook.id));
      }}
    />
  );
}

function WebhookList(props: { notice?: string; onCreated: (webhook: Schemas['WebhookEndpointWithSecret']) => void }) {
  const list = useCursorList((cursor) => ok(api.GET('/api/webhooks', { params: { query: { cursor } } })), []);
  const register = async (data: FormData) => {
    const description = text(data, 'description');
    const created = await ok(
      api.POST('/api/webhooks', { body: { url: text(data, 'url'), events: eventsOf(data), ...(description ? { description } : {}) } }),
    );
    props.onCreated(created.data);
  };
  return (
    <Page title="Webhooks">
      {props.notice ? <Notice>{props.notice}</Notice> : null}
      <Section title="Endpoints">
        <CursorTable
          caption="Endpoints that receive events"
          list={list}
          head={['URL', 'Events', 'Description', 'Status', 'Created']}
          empty="No endpoint receives events yet: register one below."
          row={(webhook) => (
            <tr key={webhook.id}>
              <td class="url">
                <Link href={selectionHref('/webhooks', 'webhook', webhook.id)} class="mono">
                  {webhook.url}
                </Link>
              </td>
              <td class="mono">{webhook.events.includes('*') ? 'every event' : webhook.events.join(', ')}</td>
              <td>{webhook.description ?? '—'}</td>
              <td>
                <EnabledBadge enabled={webhook.enabled} />
              </td>
              <td>
                <When at={webhook.created_at} />
              </td>
            </tr>
          )}
        />
      </Section>
      <Section title="Register an endpoint">
        <Form label="Register an endpoint" submit="Register endpoint" action={register}>
          <WebhookFields />
        </Form>
      </Section>
    </Page>
  );
}

function WebhookFields(props: { webhook?: Webhook }) {
  return (
    <>
      <Field
        label="URL"
        hint="Where events are posted: https, to a name that resolves to public addresses, with no user name or password in it."
      >
        <input name="url" type="url" required maxLength={2048} defaultValue={props.webhook?.url} class="mono" autoComplete="off" />
      </Field>
      <Field label="Description (optional)" hint="A note for admins: what receives these events.">
        <input name="description" maxLength={500} defaultValue={props.webhook?.description ?? undefined} autoComplete="off" />
      </Field>
      <EventFields events={props.webhook?.events} />
    </>
  );
}

function WebhookDetail(props: {
  id: number;
  fresh?: FreshSecret;
  onSecret: (fresh: FreshSecret | undefined) => void;
  onDeleted: (url: string) => void;
}) {
  useForgetOnLeaving(props.id, () => props.onSecret(undefined));
  const loaded = useLoad(() => ok(api.GET('/api/webhooks/{id}', { params: { path: { id: props.id } } })), [props.id]);
  return (
    <Page title={`Webhook ${props.id}`} actions={<Link href="/webhooks">All webhooks</Link>}>
      <Loading loaded={loaded} label="Loading the endpoint…">
        {({ data }) => <WebhookSections webhook={data} {...props} onChanged={() => loaded.reload()} />}
      </Loading>
    </Page>
  );
}

function WebhookSections(props: {
  webhook: Webhook;
  fresh?: FreshSecret;
  onSecret: (fresh: FreshSecret | undefined) => void;
  onDeleted: (url: string) => void;
  onChanged: () => void;
}) {
  const { webhook, fresh } = props;
  const path = { id: webhook.id };
  const changed = (data: FormData) => {
    const changes: Schemas['UpdateWebhookRequest'] = {};
    const url = text(data, 'url');
    if (url !== webhook.url) changes.url = url;
    const description = text(data, 'description') || null;
    if (description !== webhook.description) changes.description = description;
    const events = eventsOf(data);
    if (!sameSet(events, webhook.events)) changes.events = events;
    if (isOn(data, 'enabled') !== webhook.enabled) changes.enabled = isOn(data, 'enabled');
    return changes;
  };
  return (
    <>
      {fresh ? (
        <ShownOnce
          title={fresh.rotated ? 'The new signing secret' : 'The signing secret'}
          label="Signing secret"
          value={fresh.secret}
          onDone={() => props.onSecret(undefined)}
        >
          <p>
            The receiver checks each message’s <code>webhook-signature</code> with it (Standard Webhooks).
            {fresh.rotated ? ' For the next 24 hours messages are signed with the previous secret too, so switch within that time.' : ''}
          </p>
        </ShownOnce>
      ) : null}
      <Section title="Details">
        <dl class="facts">
          <dt>URL</dt>
          <dd class="mono">{webhook.url}</dd>
          <dt>Events</dt>
          <dd class="mono">{webhook.events.includes('*') ? 'every event' : webhook.events.join(', ')}</dd>
          <dt>Description</dt>
          <dd>{webhook.description ?? '—'}</dd>
          <dt>Status</dt>
          <dd>
            <EnabledBadge enabled={webhook.enabled} />
          </dd>
          <dt>Previous secret</dt>
          <dd>
            {webhook.previous_secret_expires_at ? (
              <>
                Also signs until <When at={webhook.previous_secret_expires_at} />
              </>
            ) : (
              'None'
            )}
          </dd>
          <Timestamps item={webhook} />
        </dl>
      </Section>
      <Section title="Deliveries">
        <Deliveries webhookId={webhook.id} />
      </Section>
      <Section title="Settings">
        <SettingsForm
          label={`Settings of webhook ${webhook.id}`}
          version={webhook.updated_at}
          changes={changed}
          send={async (body) => {
            await ok(api.PUT('/api/webhooks/{id}', { params: { path }, body }));
            props.onChanged();
          }}
          done="Saved. Deliveries still pending go to the endpoint as it is now."
        >
          <WebhookFields webhook={webhook} />
          <label class="check">
            <input type="checkbox" name="enabled" defaultChecked={webhook.enabled} />
            <span>Enabled (while disabled, no event is queued for it and its pending deliveries wait)</span>
          </label>
        </SettingsForm>
      </Section>
      <Section title="Signing secret">
        <p>A new secret is shown once; the previous one keeps signing messages beside it for 24 hours, so the receiver can switch.</p>
        <div class="row-actions">
          <ConfirmButton
            label="Rotate secret"
            title="Make a new signing secret?"
            consequence={
              <p>
                Messages are signed with the new secret and, for the next 24 hours, the current one too: give the receiver the new secret
                within that time. Rotating again within it retires the oldest secret at once.
              </p>
            }
            variant="primary"
            confirm="Rotate secret"
            action={async () => {
              const rotated = await ok(api.POST('/api/webhooks/{id}/rotate-secret', { params: { path } }));
              props.onSecret({ webhookId: webhook.id, secret: rotated.data.secret, rotated: true });
              props.onChanged();
            }}
          />
        </div>
      </Section>
      <Section title="Delete">
        <p>Deleting the endpoint stops every message to it.</p>
        <div class="row-actions">
          <ConfirmButton
            label="Delete endpoint"
            title={`Delete webhook ${webhook.id}?`}
            consequence={
              <p>
                The endpoint <code>{webhook.url}</code> is removed with its deliveries and their log, pending ones included: nothing more is
                sent to it. This cannot be undone.
              </p>
            }
            action={async () => {
              await ok(api.DELETE('/api/webhooks/{id}', { params: { path } }));
              props.onDeleted(webhook.url);
            }}
          />
        </div>
      </Section>
    </>
  );
}
