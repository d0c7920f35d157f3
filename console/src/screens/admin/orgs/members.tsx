import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, ok, type Schemas } from '../../../api';
import { Busy, ConfirmButton, Empty, ErrorMessage, Field, Form, Notice, Section, useLoad, When } from '../../../ui/kit';
import { textOf } from './form';
import { Pager } from './pager';
import { RoleOptions, type Role } from './roles';

const PER_PAGE = 25;

type Member = Schemas['OrganizationMember'];

function MemberRow(props: { id: number; member: Member; roles: Role[]; changed: (notice: string) => void }) {
  const { id, member, roles, changed } = props;
  const who = member.user.email;
  const path = { id, user_id: member.user.id };
  return (
    <tr>
      <td>
        <Link href={`/users/${member.user.id}`}>{who}</Link>
      </td>
      <td>{member.user.name}</td>
      <td class="row-form">
        <Form
          key={member.role}
          label={`Role of ${who}`}
          submit="Change role"
          action={async (data) => {
            const role = textOf(data, 'role');
            await ok(api.PUT('/api/organizations/{id}/members/{user_id}', { params: { path }, body: { role } }));
            changed(`${who} is now ${role}.`);
          }}
        >
          <Field label="Role">
            <select name="role">
              <RoleOptions roles={roles} selected={member.role} />
            </select>
          </Field>
        </Form>
      </td>
      <td>
        <When at={member.joined_at} />
      </td>
      <td>
        <ConfirmButton
          label="Remove"
          ariaLabel={`Remove ${who}`}
          title={`Remove ${who} from the organisation?`}
          consequence="They lose its role and permissions from their next token refresh; tokens already issued keep them until they expire. Their account stays."
          confirm="Remove member"
          action={async () => {
            await ok(api.DELETE('/api/organizations/{id}/members/{user_id}', { params: { path } }));
            changed(`${who} is no longer a member.`);
          }}
        />
      </td>
    </tr>
  );
}

/** The organisation's members, a page at a time: their role changed, or removed. */
export function Members(props: { id: number; roles: Role[] }) {
  const { id, roles } = props;
  const [page, setPage] = useState(1);
  const [notice, setNotice] = useState('');
  const loaded = useLoad(
    () => ok(api.GET('/api/organizations/{id}/members', { params: { path: { id }, query: { page, per_page: PER_PAGE } } })),
    [id, page],
  );
  const changed = (message: string) => {
    setNotice(message);
    loaded.reload();
  };
  const members = loaded.data?.data ?? [];
  const meta = loaded.data?.meta;
  return (
    <Section title="Members">
      {notice ? <Notice>{notice}</Notice> : null}
      <div class="table-wrap">
        <ErrorMessage error={loaded.error} />
        {loaded.loading ? <Busy label="Loading members…" /> : null}
        {!loaded.loading && !loaded.error && members.length === 0 ? <Empty>Nobody is a member yet. Invite people below.</Empty> : null}
        {members.length > 0 ? (
          <table>
            <caption>Members{meta ? ` (${meta.total})` : ''}, by when they joined</caption>
            <thead>
              <tr>
                <th scope="col">E-mail</th>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Joined</th>
                <th scope="col">Remove</th>
              </tr>
            </thead>
            <tbody>
              {members.map((member) => (
                <MemberRow key={member.user.id} id={id} member={member} roles={roles} changed={changed} />
              ))}
            </tbody>
          </table>
        ) : null}
        <Pager label="Pages of members" meta={meta} go={setPage} />
      </div>
    </Section>
  );
}
