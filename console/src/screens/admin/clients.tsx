import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, ok, type Schemas } from '../../api';
import { ConfirmButton, Empty, Form, Loading, Notice, Page, Section, When, useLoad } from '../../ui/kit';
import { changedClientFields, ClientFields, clientFields } from './integrations/client-fields';
import { selectionHref, useSelection } from './integrations/selection';
import { SettingsForm, Timestamps } from './integrations/settings';
import { ShownOnce, useForgetOnLeaving } from './integrations/shown-once';
import './integrations/integrations.css';

type Client = Schemas['OauthClient'];

/** A secret the service just made for a client: kept in this page's memory only, until dismissed. */
interface FreshSecret {
  clientId: string;
  secret: string;
  rotated: boolean;
}

/**
 * The applications that sign people in through the service's OpenID Connect provider: the list and
 * registration at /console/clients, one client's page at /console/clients?client=….
 */
export function Clients() {
  const [selected, open] = useSelection('client');
  const [fresh, setFresh] = useState<FreshSecret>();
  const [notice, setNotice] = useState<string>();
  if (selected !== undefined)
    return (
      <ClientDetail
        clientId={selected}
        fresh={fresh?.clientId === selected ? fresh : undefined}
        onSecret={setFresh}
        onDeleted={(name) => {
          setFresh(undefined);
          setNotice(`${name} was deleted, with every grant and token issued to it.`);
          open(undefined);
        }}
      />
    );
  return (
    <ClientList
      notice={notice}
      onCreated={(client) => {
        setNotice(undefined);
        if (client.client_secret) setFresh({ clientId: client.client_id, secret: client.client_secret, rotated: false });
        open(client.client_id);
      }}
    />
  );
}

function ClientList(props: { notice?: string; onCreated: (client: Schemas['OauthClientWithSecret']) => void }) {
  const clients = useLoad(() => ok(api.GET('/api/oauth/clients')), []);
  const register = async (data: FormData) => {
    const type = data.get('type') === 'public' ? 'public' : 'confidential';
    const created = await ok(api.POST('/api/oauth/clients', { body: { ...clientFields(data), type } }));
    props.onCreated(created.data);
  };
  return (
    <Page title="OAuth clients">
      {props.notice ? <Notice>{props.notice}</Notice> : null}
      <Section title="Clients">
        <Loading loaded={clients} label="Loading the clients…">
          {({ data }) =>
            data.length === 0 ? (
              <Empty>No application signs in through the service yet: register one below.</Empty>
            ) : (
              <div class="table-wrap">
                <table>
                  <caption>Applications that sign people in through the service</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Client ID</th>
                      <th scope="col">Type</th>
                      <th scope="col">Grant types</th>
                      <th scope="col">Made by</th>
                      <th scope="col">Created</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.map((client) => (
                      <tr key={client.client_id}>
                        <td>
                          <Link href={selectionHref('/clients', 'client', client.client_id)}>{client.name}</Link>{' '}
                          {client.first_party ? <span class="badge ok">first party</span> : null}
                        </td>
                        <td class="mono">{client.client_id}</td>
                        <td>{client.type}</td>
                        <td>{client.grant_types.join(', ')}</td>
                        <td>{client.registered ? 'The application itself' : 'An admin'}</td>
                        <td>
                          <When at={client.created_at} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )
          }
        </Loading>
      </Section>
      <Section title="Register a client">
        <Form label="Register a client" submit="Register client" action={register}>
          <ClientFields />
        </Form>
      </Section>
    </Page>
  );
}

function ClientDetail(props: {
  clientId: string;
  fresh?: FreshSecret;
  onSecret: (fresh: FreshSecret | undefined) => void;
  onDeleted: (name: string) => void;
}) {
  useForgetOnLeaving(props.clientId, () => props.onSecret(undefined));
  const loaded = useLoad(
    () => ok(api.GET('/api/oauth/clients/{client_id}', { params: { path: { client_id: props.clientId } } })),
    [props.clientId],
  );
  const client = loaded.data?.data;
  return (
    <Page title={client?.name ?? 'OAuth client'} actions={<Link href="/clients">All OAuth clients</Link>}>
      <Loading loaded={loaded} label="Loading the client…">
        {({ data }) => <ClientSections client={data} {...props} onChanged={() => loaded.reload()} />}
      </Loading>
    </Page>
  );
}

function ClientSections(props: {
  client: Client;
  fresh?: FreshSecret;
  onSecret: (fresh: FreshSecret | undefined) => void;
  onDeleted: (name: string) => void;
  onChanged: () => void;
}) {
  const { client, fresh } = props;
  const path = { client_id: client.client_id };
  return (
    <>
      {fresh ? (
        <ShownOnce
          title={fresh.rotated ? 'The new client secret' : 'The client secret'}
          label="Client secret"
          value={fresh.secret}
          onDone={() => props.onSecret(undefined)}
        >
          <p>
            The application authenticates at the token endpoint with its client ID <code>{client.client_id}</code> and this secret (HTTP
            Basic).{fresh.rotated ? ' The previous secret no longer works.' : ''}
          </p>
        </ShownOnce>
      ) : null}
      <Section title="Details">
        <dl class="facts">
          <dt>Client ID</dt>
          <dd class="mono">{client.client_id}</dd>
          <dt>Type</dt>
          <dd>{client.type === 'confidential' ? 'Confidential (server-side, with a secret)' : 'Public (PKCE, no secret)'}</dd>
          <dt>Secret</dt>
          <dd>{client.has_client_secret ? 'Set (never shown again)' : 'None'}</dd>
          <dt>Made by</dt>
          <dd>{client.registered ? 'The application itself (dynamic registration)' : 'An admin'}</dd>
          <dt>First party</dt>
          <dd>{client.first_party ? 'Yes: people are not asked to allow it' : 'No: people are asked to allow it'}</dd>
          <Timestamps item={client} />
        </dl>
      </Section>
      <Section title="Settings">
        <SettingsForm
          label={`Settings of ${client.name}`}
          version={client.updated_at}
          changes={(data) => changedClientFields(client, data)}
          send={async (body) => {
            await ok(api.PUT('/api/oauth/clients/{client_id}', { params: { path }, body }));
            props.onChanged();
          }}
          done="Saved. Sign-ins under way finish with the client as it is now; tokens already issued stay valid."
        >
          <ClientFields client={client} />
        </SettingsForm>
      </Section>
      {client.type === 'confidential' ? (
        <Section title="Secret">
          <p>
            A new secret replaces the current one, which stops working at once: the application needs the new one before its next sign-in.
          </p>
          <div class="row-actions">
            <ConfirmButton
              label="Rotate secret"
              title={`Give ${client.name} a new secret?`}
              consequence={
                <p>
                  The current secret stops working at once: until the application is given the new one, its token requests are refused. The
                  new secret is shown once.
                </p>
              }
              confirm="Rotate secret"
              action={async () => {
                const rotated = await ok(api.POST('/api/oauth/clients/{client_id}/rotate-secret', { params: { path } }));
                props.onSecret({ clientId: client.client_id, secret: rotated.data.client_secret, rotated: true });
              }}
            />
          </div>
        </Section>
      ) : null}
      <Section title="Delete">
        <p>Deleting the client signs nobody in through it any more.</p>
        <div class="row-actions">
          <ConfirmButton
            label="Delete client"
            title={`Delete ${client.name}?`}
            consequence={
              <p>
                The client is removed with every grant, code and token issued to it: its access and refresh tokens stop working at once, the
                people who allowed it lose that grant, and it can no longer sign anyone in. This cannot be undone.
              </p>
            }
            action={async () => {
              await ok(api.DELETE('/api/oauth/clients/{client_id}', { params: { path } }));
              props.onDeleted(client.name);
            }}
          />
        </div>
      </Section>
    </>
  );
}
