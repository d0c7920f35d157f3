// Runs against a client @hey-api/openapi-ts generated from api/openapi.yaml (into ../hey-api).
import { client } from '../hey-api/client.gen.js';
import {
  createUser,
  deleteUser,
  getMe,
  listUsers,
  login,
  loginJson,
  logout,
  refreshToken,
  register,
  restoreUser,
  updateUser,
} from '../hey-api/sdk.gen.js';
import { check, sidOf, type FlowInput, type FlowResult } from './flow.js';

export async function run(input: FlowInput): Promise<FlowResult> {
  client.setConfig({ baseUrl: input.baseUrl });
  const auth = (token: string) => ({ headers: { Authorization: `Bearer ${token}` } });

  const registered = await register({ body: { email: input.email, password: input.password, name: 'Hey Api' } });
  check(registered.data, `register answered ${registered.response.status}`);

  const signedIn = await login({ body: { grant_type: 'password', username: input.email, password: input.password } });
  check(signedIn.data, `login answered ${signedIn.response.status}`);
  const me = await getMe(auth(signedIn.data.access_token));
  check(me.data, `me answered ${me.response.status}`);

  const refreshed = await refreshToken({ body: { refresh_token: signedIn.data.data.refresh_token } });
  check(refreshed.data, `refresh answered ${refreshed.response.status}`);
  const access = refreshed.data.data.access_token;
  const out = await logout({ ...auth(access), body: { all: false } });
  check(out.data, `logout answered ${out.response.status}`);
  const after = await getMe(auth(access));
  check(after.error, 'me after logout succeeded');

  const admin = await loginJson({ body: input.admin });
  check(admin.data, `admin login answered ${admin.response.status}`);
  const asAdmin = auth(admin.data.data.access_token);

  const page = await listUsers({ ...asAdmin, query: { page: 1, per_page: 2, sort: 'id', order: 'asc' } });
  check(page.data, `page list answered ${page.response.status}`);
  check('page' in page.data.meta, 'page list without page meta');
  const cursor = await listUsers({ ...asAdmin, query: { cursor: 0, limit: 2 } });
  check(cursor.data, `cursor list answered ${cursor.response.status}`);
  check('next_cursor' in cursor.data.meta, 'cursor list without cursor meta');

  const created = await createUser({ ...asAdmin, body: { email: input.newEmail, password: input.password, name: 'Created By Hey' } });
  check(created.data, `create answered ${created.response.status}`);
  const id = created.data.data.id;
  const updated = await updateUser({ ...asAdmin, path: { id }, body: { name: 'Renamed By Hey' } });
  check(updated.data, `update answered ${updated.response.status}`);
  const deleted = await deleteUser({ ...asAdmin, path: { id } });
  check(deleted.response.status === 204, `delete answered ${deleted.response.status}`);
  const restored = await restoreUser({ ...asAdmin, path: { id } });
  check(restored.data, `restore answered ${restored.response.status}`);

  return {
    registeredId: registered.data.data.user.id,
    meEmail: me.data.data.email,
    refreshedSid: sidOf(refreshed.data.data.refresh_token),
    pageMeta: page.data.meta,
    pageIds: page.data.data.map((user) => user.id),
    cursorIds: cursor.data.data.map((user) => user.id),
    cursorNext: cursor.data.meta.next_cursor,
    createdId: id,
    updatedName: updated.data.data.name,
    restoredDeletedAt: restored.data.data.deleted_at,
    meAfterLogout: after.response.status,
  };
}
