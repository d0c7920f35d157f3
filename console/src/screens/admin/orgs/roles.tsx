import type { Schemas } from '../../../api';

export type Role = Schemas['OrganizationRole'];

/**
 * The options of a role choice: every role given, by its name and key, `selected` chosen. (A select
 * has no default value of its own: its options carry it.)
 */
export function RoleOptions(props: { roles: Role[]; selected?: string }) {
  return (
    <>
      {props.roles.map((role) => (
        <option key={role.key} value={role.key} selected={role.key === props.selected}>
          {role.name === role.key ? role.key : `${role.name} (${role.key})`}
        </option>
      ))}
    </>
  );
}
