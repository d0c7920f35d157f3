import type { User } from '../../../api';

/** Whether the user may sign in: active, disabled or deleted, as a badge. */
export function StatusBadge(props: { user: User }) {
  const { user } = props;
  if (user.deleted_at) return <span class="badge off">Deleted</span>;
  return user.is_active ? <span class="badge ok">Active</span> : <span class="badge off">Disabled</span>;
}
