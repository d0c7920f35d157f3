import { api, ok } from '../../api';
import { CLIENT_ID } from '../../auth';
import { ConfirmButton, Empty, Loading, Section, When, useLoad } from '../../ui/kit';

/** The applications the person allowed to sign them in, and what each may do; each can be taken back. */
export function Grants() {
  const grants = useLoad(() => ok(api.GET('/api/auth/oauth-grants')), []);
  return (
    <Section title="Connected applications">
      <Loading loaded={grants} label="Loading your connected applications…">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>No application signs you in through this service yet.</Empty>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Applications you allowed</caption>
                <thead>
                  <tr>
                    <th scope="col">Application</th>
                    <th scope="col">Allowed</th>
                    <th scope="col">Since</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((grant) => {
                    const thisConsole = grant.client_id === CLIENT_ID;
                    return (
                      <tr key={grant.id}>
                        <td>
                          {grant.client_name} {thisConsole ? <span class="badge ok">This console</span> : null}
                        </td>
                        <td>
                          <ul class="scopes">
                            {grant.scopes.map((scope) => (
                              <li key={scope}>
                                <code>{scope}</code>
                              </li>
                            ))}
                          </ul>
                        </td>
                        <td>
                          <When at={grant.created_at} />
                        </td>
                        <td>
                          <ConfirmButton
                            label="Revoke"
                            ariaLabel={`Revoke the access of ${grant.client_name}`}
                            title={`Revoke the access of ${grant.client_name}?`}
                            consequence={
                              thisConsole ? (
                                <p>This console is signed out at once, and asks you to sign in again.</p>
                              ) : (
                                <p>
                                  {grant.client_name} is signed out at once: its tokens stop working, and it asks for your permission again
                                  the next time you use it.
                                </p>
                              )
                            }
                            action={async () => {
                              await ok(api.DELETE('/api/auth/oauth-grants/{id}', { params: { path: { id: grant.id } } }));
                              grants.reload();
                            }}
                          />
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )
        }
      </Loading>
    </Section>
  );
}
