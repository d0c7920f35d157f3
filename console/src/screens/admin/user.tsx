import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, ApiFailure, ok, type Schemas, type User } from '../../api';
import { useMe } from '../../me';
import { Button, ConfirmButton, Empty, Field, Form, Loading, Notice, Page, Section, useLoad, When } from '../../ui/kit';
import { AuditEvents } from './people/audit-events';
import { StatusBadge } from './people/status';
import './people/people.css';
import './user.css';

type Session = Schemas['Session'];

/**
 * The user, deleted ones included: the API reads a live user by id, and finds a deleted one in the
 * list of deleted users (the first after the id before theirs).
 */
async function loadUser(id: number): Promise<User> {
  try {
    return (await ok(api.GET('/api/users/{id}', { params: { path: { id } } }))).data;
  } catch (error) {
    if (!(error instanceof ApiFailure) || error.status !== 404) throw error;
    const deleted = await ok(api.GET('/api/users', { params: { query: { status: 'deleted', cursor: id - 1, limit: 1 } } }));
    const user = deleted.data[0];
    if (user?.id !== id) throw error;
    return user;
  }
}

function Profile(props: { user: User }) {
  const { user } = props;
  return (
    <Section title="Profile">
      <dl class="facts">
        <dt>E-mail</dt>
        <dd>
          {user.email} {user.email_verified ? <span class="badge ok">verified</span> : <span class="badge off">not verified</span>}
        </dd>
        {user.pending_email ? (
          <>
            <dt>Asked to change to</dt>
            <dd>{user.pending_email}</dd>
          </>
        ) : null}
        <dt>Name</dt>
        <dd>{user.name}</dd>
        <dt>Role</dt>
        <dd>{user.role}</dd>
        <dt>Status</dt>
        <dd>
          <StatusBadge user={user} />
        </dd>
        <dt>User id</dt>
        <dd class="mono">{user.id}</dd>
        <dt>Created</dt>
        <dd>
          <When at={user.created_at} />
        </dd>
        <dt>Updated</dt>
        <dd>
          <When at={user.updated_at} />
        </dd>
        {user.deleted_at ? (
          <>
            <dt>Deleted</dt>
            <dd>
              <When at={user.deleted_at} />
            </dd>
          </>
        ) : null}
      </dl>
    </Section>
  );
}

/** Role, enabling and disabling, the reset mail, second factors, deletion and restoring. */
function Manage(props: { user: User; changed: (notice: string) => void }) {
  const { user, changed } = props;
  const me = useMe();
  const id = user.id;
  const who = user.email;
  const update = async (body: Schemas['UpdateUserRequest']) => {
    await ok(api.PUT('/api/users/{id}', { params: { path: { id } }, body }));
  };
  if (user.deleted_at)
    return (
      <Section title="Manage">
        <p>This account is deleted: it cannot sign in and its e-mail address stays taken until it is restored.</p>
        <div class="actions">
          <ConfirmButton
            label="Restore user"
            variant="primary"
            title={`Restore ${who}?`}
            consequence="The account comes back as it was before it was deleted; its sessions stay ended."
            action={async () => {
              await ok(api.POST('/api/users/{id}/restore', { params: { path: { id } } }));
              changed(`${who} is restored.`);
            }}
          />
        </div>
      </Section>
    );
  return (
    <Section title="Manage">
      <Form
        key={user.role}
        label="Role"
        submit="Change role"
        action={async (data) => {
          const role = data.get('role') === 'admin' ? 'admin' : 'user';
          await update({ role });
          changed(`${who} is now ${role === 'admin' ? 'an admin' : 'a user'}.`);
        }}
      >
        <Field label="Role" hint="Admins may manage every user and the service’s settings.">
          <select name="role">
            <option value="user" selected={user.role === 'user'}>
              User
            </option>
            <option value="admin" selected={user.role === 'admin'}>
              Admin
            </option>
          </select>
        </Field>
      </Form>
      <div class="manage-actions">
        {user.is_active ? (
          <ConfirmButton
            label="Disable user"
            title={`Disable ${who}?`}
            consequence={
              <p>
                They are signed out everywhere at once: every session, and every token an application got through the service, ends. They
                cannot sign in until the account is enabled again.
              </p>
            }
            action={async () => {
              await update({ is_active: false });
              changed(`${who} is disabled and signed out everywhere.`);
            }}
          />
        ) : (
          <ConfirmButton
            label="Enable user"
            variant="primary"
            title={`Enable ${who}?`}
            consequence="They may sign in again. The sessions that ended when the account was disabled stay ended."
            action={async () => {
              await update({ is_active: true });
              changed(`${who} is enabled: they may sign in again.`);
            }}
          />
        )}
        <ConfirmButton
          label="Send password reset mail"
          variant="primary"
          title={`Send ${who} a password reset mail?`}
          consequence="They get a link to choose a new password; their current password works until they do. No mail goes out when one was sent moments ago."
          confirm="Send mail"
          action={async () => {
            await ok(api.POST('/api/auth/forgot-password', { body: { email: user.email } }));
            changed(`A password reset mail is on its way to ${who}.`);
          }}
        />
        <ConfirmButton
          label="Reset second factors"
          title={`Remove every second factor of ${who}?`}
          consequence="Their authenticator apps, passkeys and recovery codes are removed: they sign in with their password alone and may set up a second factor again."
          confirm="Remove factors"
          action={async () => {
            await ok(api.DELETE('/api/users/{id}/mfa', { params: { path: { id } } }));
            changed(`Every second factor of ${who} is removed.`);
          }}
        />
        {me.user.id === id ? null : (
          <ConfirmButton
            label="Delete user"
            title={`Delete ${who}?`}
            consequence="They are signed out everywhere and can no longer sign in. The account is kept, with its e-mail address, so that an admin can restore it."
            action={async () => {
              await ok(api.DELETE('/api/users/{id}', { params: { path: { id } } }));
              changed(`${who} is deleted.`);
            }}
          />
        )}
      </div>
    </Section>
  );
}

function Sessions(props: { user: User; round: number; changed: (notice: string) => void }) {
  const { user, changed } = props;
  const loaded = useLoad(
    () => ok(api.GET('/api/users/{id}/sessions', { params: { path: { id: user.id } } })).then((body) => body.data),
    [user.id, props.round],
  );
  return (
    <Section
      title="Sessions"
      actions={
        <Button aria-label="Refresh the sessions" onClick={() => loaded.reload()}>
          Refresh
        </Button>
      }
    >
      <Loading loaded={loaded} label="Loading sessions…">
        {(sessions: Session[]) =>
          sessions.length === 0 ? (
            <Empty>No live sessions: {user.email} is signed out everywhere.</Empty>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Live sessions, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Started</th>
                    <th scope="col">Last used</th>
                    <th scope="col">From</th>
                    <th scope="col">Device</th>
                    <th scope="col">Expires</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {sessions.map((session) => (
                    <tr key={session.id} data-session={session.id}>
                      <td>
                        <When at={session.created_at} />
                        {session.current ? <span class="badge ok">this console</span> : null}
                      </td>
                      <td>
                        <When at={session.last_used_at} />
                      </td>
                      <td>
                        {session.ip ?? '—'}
                        {session.provider ? ` (through ${session.provider})` : ''}
                      </td>
                      <td class="session-agent">{session.user_agent ?? '—'}</td>
                      <td>
                        <When at={session.expires_at} />
                      </td>
                      <td>
                        <ConfirmButton
                          label="Revoke"
                          ariaLabel={`Revoke the session started ${new Date(session.created_at).toLocaleString()}${session.ip ? ` from ${session.ip}` : ''}`}
                          title="Revoke this session?"
                          consequence={`The device signed in with it is signed out at once: its tokens, and those applications got through it, stop working. ${user.email}’s other sessions go on.`}
                          action={async () => {
                            await ok(
                              api.DELETE('/api/users/{id}/sessions/{session_id}', {
                                params: { path: { id: user.id, session_id: session.id } },
                              }),
                            );
                            changed('The session is revoked.');
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

export function UserDetail(props: { id: string }) {
  const id = Number(props.id);
  const valid = Number.isInteger(id) && id > 0 && id <= 2147483647;
  const loaded = useLoad(() => (valid ? loadUser(id) : Promise.reject(new Error('This is not the address of a user.'))), [id]);
  const [round, setRound] = useState(0);
  const [notice, setNotice] = useState<string>();
  // After an action: say what happened, and read the user, their sessions and their events again.
  const changed = (message: string) => {
    setNotice(message);
    setRound((n) => n + 1);
    loaded.reload();
  };
  const user = loaded.data?.id === id ? loaded.data : undefined;
  return (
    <Page title={user ? user.name || user.email : 'User'} actions={<Link href="/users">All users</Link>}>
      {notice ? <Notice>{notice}</Notice> : null}
      <Loading loaded={loaded} label="Loading the user…">
        {(current: User) => (
          <>
            <Profile user={current} />
            <Manage user={current} changed={changed} />
            {current.deleted_at ? null : <Sessions user={current} round={round} changed={changed} />}
            <Section title="Audit events">
              <AuditEvents
                filter={{ user_id: current.id }}
                round={round}
                caption={`Events by or about ${current.email}, oldest first`}
                empty="No events name this user yet."
              />
            </Section>
          </>
        )}
      </Loading>
    </Page>
  );
}
