import { useState } from 'preact/hooks';
import { api, ok } from '../../api';
import { ConfirmButton, Empty, Field, Form, Loading, Notice, Page, Section, useLoad } from '../../ui/kit';
import { permissionsOf, textOf } from './orgs/form';
import type { Role } from './orgs/roles';
import './orgs/orgs.css';

const ORGANIZATION_PERMISSIONS = 'org:read, org:update, org:delete, members:read, members:invite, members:update, members:remove';

function Permissions(props: { role: Role }) {
  if (props.role.permissions.length === 0) return <span>None</span>;
  return (
    <ul class="permissions" aria-label={`Permissions of ${props.role.key}`}>
      {props.role.permissions.map((permission) => (
        <li key={permission}>
          <code>{permission}</code>
        </li>
      ))}
    </ul>
  );
}

function EditRole(props: { role: Role; changed: (notice: string) => void }) {
  const { role, changed } = props;
  return (
    <details class="edit-role">
      <summary>Edit {role.key}</summary>
      <Form
        key={role.updated_at}
        label={`Edit ${role.key}`}
        submit="Save role"
        action={async (data) => {
          await ok(
            api.PUT('/api/organization-roles/{key}', {
              params: { path: { key: role.key } },
              body: { name: textOf(data, 'name'), permissions: permissionsOf(textOf(data, 'permissions')) },
            }),
          );
          changed(`${role.key} is saved; its members get the new permissions at their next token refresh.`);
        }}
      >
        <Field label="Name">
          <input name="name" required maxLength={100} autoComplete="off" defaultValue={role.name} />
        </Field>
        <Field label="Permissions" hint="One a line, or separated by commas.">
          <textarea name="permissions" rows={4} class="mono" defaultValue={role.permissions.join('\n')} />
        </Field>
      </Form>
    </details>
  );
}

function RoleRow(props: { role: Role; changed: (notice: string) => void }) {
  const { role, changed } = props;
  return (
    <tr>
      <td class="mono">{role.key}</td>
      <td>
        {role.name} {role.built_in ? <span class="badge">built-in</span> : null}
      </td>
      <td>
        <Permissions role={role} />
      </td>
      <td>
        {role.built_in ? (
          <span>Built-in roles cannot be changed or deleted.</span>
        ) : (
          <div class="row-actions">
            <EditRole role={role} changed={changed} />
            <ConfirmButton
              label="Delete"
              ariaLabel={`Delete ${role.key}`}
              title={`Delete the role ${role.key}?`}
              consequence="Every organisation loses it. A role still held by a member cannot be deleted: give them another first. Pending invitations with it are dropped."
              confirm="Delete role"
              action={async () => {
                await ok(api.DELETE('/api/organization-roles/{key}', { params: { path: { key: role.key } } }));
                changed(`${role.key} is deleted.`);
              }}
            />
          </div>
        )}
      </td>
    </tr>
  );
}

export function Roles() {
  const [notice, setNotice] = useState('');
  const [formKey, setFormKey] = useState(0);
  const loaded = useLoad(() => ok(api.GET('/api/organization-roles')), []);
  const changed = (message: string) => {
    setNotice(message);
    loaded.reload();
  };
  return (
    <Page title="Roles">
      <p>The roles every organisation shares. Access tokens for an organisation carry the member’s role and its permissions.</p>
      {notice ? <Notice>{notice}</Notice> : null}
      <Loading loaded={loaded} label="Loading roles…">
        {({ data: roles }) =>
          roles.length === 0 ? (
            <Empty>There are no roles. Create one below.</Empty>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Roles, the built-in ones first</caption>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Name</th>
                    <th scope="col">Permissions</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {roles.map((role) => (
                    <RoleRow key={role.key} role={role} changed={changed} />
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loading>
      <Section title="Create a role">
        <Form
          key={formKey}
          label="Create a role"
          submit="Create role"
          action={async (data) => {
            const created = await ok(
              api.POST('/api/organization-roles', {
                body: { key: textOf(data, 'key'), name: textOf(data, 'name'), permissions: permissionsOf(textOf(data, 'permissions')) },
              }),
            );
            setFormKey((n) => n + 1);
            changed(`${created.data.key} is created: give it to members on an organisation’s screen.`);
          }}
        >
          <Field label="Key" hint="How tokens and the API name it, such as billing.">
            <input name="key" required maxLength={48} autoComplete="off" class="mono" />
          </Field>
          <Field label="Name">
            <input name="name" required maxLength={100} autoComplete="off" />
          </Field>
          <Field
            label="Permissions"
            hint={`One a line, or separated by commas: the organisation’s own (${ORGANIZATION_PERMISSIONS}) or yours, such as invoices:read.`}
          >
            <textarea name="permissions" rows={4} class="mono" />
          </Field>
        </Form>
      </Section>
    </Page>
  );
}
