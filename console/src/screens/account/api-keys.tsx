import { useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../../api';
import { text } from './form-data';
import { ConfirmButton, Empty, Field, Form, Loading, Secret, Section, When, useLoad } from '../../ui/kit';
import { useProven } from './reauth';

/** Keys for programs that call the API for the person: made here (the key shown once), listed, deleted. */
export function ApiKeys() {
  const proven = useProven();
  const keys = useLoad(() => ok(api.GET('/api/auth/api-keys')), []);
  const [created, setCreated] = useState<Schemas['CreatedApiKey']>();

  const create = async (data: FormData) => {
    const days = Number(data.get('expires_in_days'));
    const body = { name: text(data, 'name'), expires_in_days: days, read_only: data.get('read_only') === 'on' };
    const answer = await proven(() => ok(api.POST('/api/auth/api-keys', { body })));
    setCreated(answer.data);
    keys.reload();
  };

  return (
    <Section title="API keys">
      <Form label="Create an API key" submit="Create key" action={create}>
        <Field label="Name" hint="What the key is for, e.g. Nightly export.">
          <input name="name" required maxLength={100} />
        </Field>
        <Field label="Expires after (days)">
          <input name="expires_in_days" type="number" min={1} max={365} defaultValue="90" required />
        </Field>
        <label class="check">
          <input name="read_only" type="checkbox" />
          <span>Read only (the key may only read, never change anything)</span>
        </label>
      </Form>
      {created ? <Secret label={`The key “${created.name}”`} value={created.key} /> : null}
      <Loading loaded={keys} label="Loading your API keys…">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>No API key yet: create one for a program that calls the API for you.</Empty>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>API keys</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Starts with</th>
                    <th scope="col">Access</th>
                    <th scope="col">Expires</th>
                    <th scope="col">Last used</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((key) => (
                    <tr key={key.id}>
                      <td>{key.name}</td>
                      <td class="mono">{key.prefix}</td>
                      <td>{key.read_only ? 'Read only' : 'Read and write'}</td>
                      <td>
                        <When at={key.expires_at} />
                      </td>
                      <td>
                        <When at={key.last_used_at} />
                      </td>
                      <td>
                        <ConfirmButton
                          label="Delete"
                          ariaLabel={`Delete the API key ${key.name}`}
                          title={`Delete the API key “${key.name}”?`}
                          consequence={<p>The key stops working at once: programs that use it are refused.</p>}
                          action={async () => {
                            await ok(api.DELETE('/api/auth/api-keys/{id}', { params: { path: { id: key.id } } }));
                            if (created?.id === key.id) setCreated(undefined);
                            keys.reload();
                          }}
                        />
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
  );
}
