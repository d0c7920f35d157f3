import { useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../../../api';
import { Button, ConfirmButton, Empty, ErrorMessage, Field, Form, Loading, Notice, Section, useLoad, When } from '../../../ui/kit';
import { textOf } from './form';
import { RoleOptions, type Role } from './roles';

type Invitation = Schemas['OrganizationInvitation'];

function Resend(props: { id: number; invitation: Invitation; changed: (notice: string) => void }) {
  const { id, invitation, changed } = props;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const resend = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await ok(
        api.POST('/api/organizations/{id}/invitations/{invitation_id}/resend', { params: { path: { id, invitation_id: invitation.id } } }),
      );
      changed(`The invitation is sent again to ${invitation.email}, valid for another week.`);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button aria-label={`Resend the invitation to ${invitation.email}`} disabled={busy} onClick={() => void resend()}>
        Resend
      </Button>
      <ErrorMessage error={error} />
    </>
  );
}

/** The invitations not yet answered: sent again, revoked, and a form to invite someone. */
export function Invitations(props: { id: number; roles: Role[] }) {
  const { id, roles } = props;
  const [notice, setNotice] = useState('');
  const [formKey, setFormKey] = useState(0);
  const loaded = useLoad(() => ok(api.GET('/api/organizations/{id}/invitations', { params: { path: { id } } })), [id]);
  const changed = (message: string) => {
    setNotice(message);
    loaded.reload();
  };
  const now = Date.now();
  return (
    <Section title="Invitations">
      {notice ? <Notice>{notice}</Notice> : null}
      <Loading loaded={loaded} label="Loading invitations…">
        {({ data: invitations }) =>
          invitations.length === 0 ? (
            <Empty>No invitation is waiting for an answer. Invite someone by e-mail below.</Empty>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Pending invitations, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">E-mail</th>
                    <th scope="col">Role</th>
                    <th scope="col">Invited by</th>
                    <th scope="col">Expires</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {invitations.map((invitation) => (
                    <tr key={invitation.id}>
                      <td>{invitation.email}</td>
                      <td>{invitation.role}</td>
                      <td>{invitation.invited_by?.email ?? '—'}</td>
                      <td>
                        <When at={invitation.expires_at} />
                        {Date.parse(invitation.expires_at) < now ? <span class="badge off">expired</span> : null}
                      </td>
                      <td>
                        <div class="row-actions">
                          <Resend id={id} invitation={invitation} changed={changed} />
                          <ConfirmButton
                            label="Revoke"
                            ariaLabel={`Revoke the invitation to ${invitation.email}`}
                            title={`Revoke the invitation to ${invitation.email}?`}
                            consequence="Its link stops working; invite the address again to let them join."
                            confirm="Revoke invitation"
                            action={async () => {
                              await ok(
                                api.DELETE('/api/organizations/{id}/invitations/{invitation_id}', {
                                  params: { path: { id, invitation_id: invitation.id } },
                                }),
                              );
                              changed(`The invitation to ${invitation.email} is revoked.`);
                            }}
                          />
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loading>
      <Form
        key={formKey}
        label="Invite someone"
        submit="Send invitation"
        action={async (data) => {
          const email = textOf(data, 'email');
          await ok(
            api.POST('/api/organizations/{id}/invitations', { params: { path: { id } }, body: { email, role: textOf(data, 'role') } }),
          );
          setFormKey((n) => n + 1);
          changed(`An invitation is on its way to ${email}.`);
        }}
      >
        <Field
          label="E-mail address"
          hint="They accept it signed in with this address, verified; someone without an account signs up first."
        >
          <input name="email" type="email" required maxLength={254} autoComplete="off" />
        </Field>
        <Field label="Role">
          <select name="role">
            <RoleOptions roles={roles} selected="member" />
          </select>
        </Field>
      </Form>
    </Section>
  );
}
