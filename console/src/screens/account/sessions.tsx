import { api, ok, type Schemas } from '../../api';
import { ConfirmButton, Empty, Loading, Section, When, useLoad } from '../../ui/kit';

type Session = Schemas['Session'];

/** Where a session was signed in from, in words. */
function describe(session: Session): string {
  const from = [session.user_agent, session.ip].filter(Boolean).join(' at ');
  return from || 'an unknown device';
}

/** The person's live sessions: this one marked, the others revocable. */
export function Sessions() {
  const sessions = useLoad(() => ok(api.GET('/api/auth/sessions')), []);
  return (
    <Section title="Sessions">
      <Loading loaded={sessions} label="Loading your sessions…">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>No session is open.</Empty>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Signed-in sessions, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Device</th>
                    <th scope="col">Signed in</th>
                    <th scope="col">Last active</th>
                    <th scope="col">Expires</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((session) => (
                    <tr key={session.id}>
                      <td>
                        <span class="session-device">{session.user_agent ?? 'Unknown device'}</span>
                        {session.ip ? <span class="session-ip mono"> {session.ip}</span> : null}
                        {session.provider ? <span class="badge">{session.provider}</span> : null}{' '}
                        {session.current ? <span class="badge ok">This session</span> : null}
                      </td>
                      <td>
                        <When at={session.created_at} />
                      </td>
                      <td>
                        <When at={session.last_used_at} />
                      </td>
                      <td>
                        <When at={session.expires_at} />
                      </td>
                      <td>
                        {session.current ? null : (
                          <ConfirmButton
                            label="Revoke"
                            ariaLabel={`Revoke the session of ${describe(session)}`}
                            title="Revoke this session?"
                            consequence={
                              <p>
                                The session of {describe(session)} is signed out at once: its tokens stop working, and whoever uses it signs
                                in again.
                              </p>
                            }
                            action={async () => {
                              await ok(api.DELETE('/api/auth/sessions/{id}', { params: { path: { id: session.id } } }));
                              sessions.reload();
                            }}
                          />
                        )}
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
