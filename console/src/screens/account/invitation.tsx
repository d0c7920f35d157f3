import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, ok, type Schemas } from '../../api';
import { useMe } from '../../me';
import { Busy, Button, ConfirmButton, ErrorMessage, Loading, Notice, Page, When, useLoad } from '../../ui/kit';

type Invitation = Schemas['OrganizationInvitation'];
type Membership = Schemas['MyOrganization'];

/** Accept or decline an invitation; the API's message when it cannot be (another address, unverified, expired). */
export function Decide(props: { invitation: Pick<Invitation, 'id'> & Partial<Invitation>; onDone: (joined?: Membership) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const name = props.invitation.organization?.name ?? 'the organisation';
  const path = { params: { path: { invitation_id: props.invitation.id } } };

  const accept = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const answer = await ok(api.POST('/api/auth/invitations/{invitation_id}/accept', path));
      props.onDone(answer.data);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="decide">
      <ErrorMessage error={error} />
      <div class="form-actions">
        <Button variant="primary" disabled={busy} aria-label={`Accept the invitation to ${name}`} onClick={() => void accept()}>
          Accept
        </Button>
        <ConfirmButton
          label="Decline"
          ariaLabel={`Decline the invitation to ${name}`}
          title={`Decline the invitation to ${name}?`}
          consequence={<p>The invitation can no longer be accepted: to join later, ask for a new one.</p>}
          action={async () => {
            await ok(api.POST('/api/auth/invitations/{invitation_id}/decline', path));
            props.onDone();
          }}
        />
        {busy ? <Busy label="Joining…" /> : null}
      </div>
    </div>
  );
}

/** /console/invitations/{id}, the link of the invitation mail: the invitation, then the organisation joined. */
export function Invitation(props: { id: string }) {
  const { user } = useMe();
  const invitations = useLoad(() => ok(api.GET('/api/auth/invitations')), []);
  const [outcome, setOutcome] = useState<{ joined?: Membership } | undefined>();

  if (outcome)
    return (
      <Page title={outcome.joined ? `You joined ${outcome.joined.organization.name}` : 'Invitation declined'}>
        {outcome.joined ? (
          <dl class="facts">
            <dt>Organisation</dt>
            <dd>
              {outcome.joined.organization.name} <span class="mono">{outcome.joined.organization.slug}</span>
            </dd>
            <dt>Your role</dt>
            <dd>{outcome.joined.role}</dd>
          </dl>
        ) : (
          <Notice>The invitation is declined.</Notice>
        )}
        <p>
          Your organisations are listed under <Link href="/account">Account</Link>.
        </p>
      </Page>
    );

  return (
    <Page title="Invitation">
      <Loading loaded={invitations} label="Loading the invitation…">
        {({ data }) => {
          const invitation = data.find((candidate) => candidate.id === props.id);
          const done = (joined?: Membership) => setOutcome({ joined });
          if (!invitation)
            return (
              <>
                <p>
                  This invitation is not among those waiting for {user.email}
                  {user.email_verified ? '' : ', whose address is not verified yet'}. It may be for another address, or already used or
                  expired. Accepting it tells you what the service says.
                </p>
                <Decide invitation={{ id: props.id }} onDone={done} />
              </>
            );
          return (
            <>
              <p>
                <strong>{invitation.organization.name}</strong> invites you to join as <strong>{invitation.role}</strong>.
              </p>
              <dl class="facts">
                <dt>Organisation</dt>
                <dd>
                  {invitation.organization.name} <span class="mono">{invitation.organization.slug}</span>
                </dd>
                <dt>Invited address</dt>
                <dd>{invitation.email}</dd>
                <dt>Invited by</dt>
                <dd>{invitation.invited_by ? invitation.invited_by.name || invitation.invited_by.email : '—'}</dd>
                <dt>Expires</dt>
                <dd>
                  <When at={invitation.expires_at} />
                </dd>
              </dl>
              <Decide invitation={invitation} onDone={done} />
            </>
          );
        }}
      </Loading>
    </Page>
  );
}
