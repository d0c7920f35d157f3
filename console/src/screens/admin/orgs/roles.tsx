import type { Schemas } from '../../../api';

export type Role = Schemas['OrganizationRole'];

/** The options of a role choice: every role the organisations share, by its name and key. */
export function RoleOptions(props: { roles: Role[] }) {
  return (
    <>
      {props.roles.map((role) => (
        <option key={role.key} value={role.key}>
          {role.name === role.key ? role.key : `${role.name} (${role.key})`}
        </option>
      ))}
    </>
  );
}
