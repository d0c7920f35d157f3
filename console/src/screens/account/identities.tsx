import { api, ok } from '../../api';
import { ConfirmButton, Empty, Loading, Section, When, useLoad } from '../../ui/kit';

/** The providers (GitHub, a company's OpenID Connect…) linked to the account; each can be unlinked. */
export function Identities() {
  const identities = useLoad(() => ok(api.GET('/api/auth/identities')), []);
  return (
    <Section title="Linked identities">
      <Loading loaded={identities} label="Loading your linked identities…">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>No identity provider is linked. Signing in with a provider whose address is yours links it.</Empty>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Linked identities</caption>
                <thead>
                  <tr>
                    <th scope="col">Provider</th>
                    <th scope="col">Account there</th>
                    <th scope="col">Linked</th>
                    <th scope="col">Last used</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((identity) => (
                    <tr key={identity.id}>
                      <td>{identity.provider}</td>
                      <td>{identity.email ?? <span class="mono">{identity.subject}</span>}</td>
                      <td>
                        <When at={identity.created_at} />
                      </td>
                      <td>
                        <When at={identity.last_used_at} />
                      </td>
                      <td>
                        <ConfirmButton
                          label="Unlink"
                          ariaLabel={`Unlink ${identity.provider} ${identity.email ?? identity.subject}`}
                          title={`Unlink ${identity.provider}?`}
                          consequence={
                            <p>
                              Your {identity.provider} account {identity.email ?? identity.subject} no longer signs you in here. Sessions it
                              opened stay until they end or you revoke them.
                            </p>
                          }
                          action={async () => {
                            await ok(api.DELETE('/api/auth/identities/{id}', { params: { path: { id: identity.id } } }));
                            identities.reload();
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
