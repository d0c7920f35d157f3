import { Link } from 'wouter-preact';
import { api, ok } from '../../api';
import { useMe } from '../../me';
import { useState } from 'preact/hooks';
import { activeOrganization, switchOrganization } from '../../auth';
import { Button, ConfirmButton, Empty, ErrorMessage, Loading, Section, When, useLoad } from '../../ui/kit';
import { Decide } from './invitation';

/** The organisations the person belongs to (each can be left) and the invitations waiting for them. */
export function Organizations() {
  const { user } = useMe();
  const memberships = useLoad(() => ok(api.GET('/api/auth/organizations')), []);
  const invitations = useLoad(() => ok(api.GET('/api/auth/invitations')), []);
  const [active, setActive] = useState(activeOrganization());
  const [switchError, setSwitchError] = useState<unknown>();
  const switchTo = async (id: number) => {
    setSwitchError(undefined);
    try {
      await switchOrganization(id);
      setActive(activeOrganization());
    } catch (error) {
      setSwitchError(error);
    }
  };

  return (
    <Section title="Organisations">
      <Loading loaded={memberships} label="Loading your organisations…">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>You belong to no organisation. An invitation from one shows here and in your mail.</Empty>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Your organisations</caption>
                <thead>
                  <tr>
                    <th scope="col">Organisation</th>
                    <th scope="col">Your role</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.map(({ organization, role }) => (
                    <tr key={organization.id}>
                      <td>
                        {organization.name} <span class="mono">{organization.slug}</span>
                      </td>
                      <td>{role}</td>
                      <td class="actions">
                        {active === organization.id ? (
                          <span class="badge ok">Active</span>
                        ) : (
                          <Button aria-label={`Act for ${organization.name}`} onClick={() => void switchTo(organization.id)}>
                            Act for it
                          </Button>
                        )}
                        <ConfirmButton
                          label="Leave"
                          ariaLabel={`Leave ${organization.name}`}
                          title={`Leave ${organization.name}?`}
                          consequence={
                            <p>
                              You stop being a member of {organization.name}: to return, someone there invites you again. Tokens already
                              issued keep their claims until they expire.
                            </p>
                          }
                          action={async () => {
                            await ok(
                              api.DELETE('/api/organizations/{id}/members/{user_id}', {
                                params: { path: { id: organization.id, user_id: user.id } },
                              }),
                            );
                            memberships.reload();
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
      <ErrorMessage error={switchError} />
      <h3>Invitations</h3>
      <Loading loaded={invitations} label="Loading your invitations…">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>
              {user.email_verified
                ? 'No invitation is waiting for you.'
                : 'Invitations show once your e-mail address is verified: follow the link in the mail we sent you.'}
            </Empty>
          ) : (
            <ul class="invitations">
              {data.map((invitation) => (
                <li key={invitation.id} class="invitation">
                  <p>
                    <Link href={`/invitations/${invitation.id}`}>{invitation.organization.name}</Link> invites you as{' '}
                    <strong>{invitation.role}</strong>
                    {invitation.invited_by ? <> (from {invitation.invited_by.name || invitation.invited_by.email})</> : null}; until{' '}
                    <When at={invitation.expires_at} />.
                  </p>
                  <Decide
                    invitation={invitation}
                    onDone={() => {
                      invitations.reload();
                      memberships.reload();
                    }}
                  />
                </li>
              ))}
            </ul>
          )
        }
      </Loading>
    </Section>
  );
}
