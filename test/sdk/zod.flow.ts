// Runs against a client openapi-zod-client generated from api/openapi.yaml (into ../zod): Zodios over
// axios, which checks every request against the contract's schemas (its patterns among them, written
// into the client as regex literals) and every answer against the schema of its status.
import { isErrorFromAlias } from '@zodios/core';
import { createApiClient } from '../zod/client.js';
import { check, sidOf, type FlowInput, type FlowResult } from './flow.js';

export async function run(input: FlowInput): Promise<FlowResult> {
  const api = createApiClient(input.baseUrl);
  const bearer = (token: string) => ({ headers: { Authorization: `Bearer ${token}` } });

  const registered = await api.register({ email: input.email, password: input.password, name: 'Open Api Zod' });
  const signedIn = await api.login({ username: input.email, password: input.password });
  const me = await api.getMe(bearer(signedIn.access_token));

  const refreshed = await api.refreshToken({ refresh_token: signedIn.refresh_token });
  await api.logout({ all: false }, bearer(refreshed.data.access_token));
  let meAfterLogout = 0;
  try {
    await api.getMe(bearer(refreshed.data.access_token));
  } catch (error) {
    check(isErrorFromAlias(api.api, 'getMe', error), `me after logout threw ${String(error)}`);
    check(error.response.data.error.code === 'UNAUTHORIZED', `me after logout answered ${error.response.data.error.code}`);
    meAfterLogout = error.response.status;
  }

  const admin = bearer((await api.loginJson(input.admin)).data.access_token);
  const page = await api.listUsers({ ...admin, queries: { page: 1, per_page: 2, sort: 'id', order: 'asc' } });
  check('page' in page.meta, 'page list without page meta');
  const cursor = await api.listUsers({ ...admin, queries: { cursor: 0, limit: 2 } });
  check('next_cursor' in cursor.meta, 'cursor list without cursor meta');

  const created = await api.createUser({ email: input.newEmail, password: input.password, name: 'Created By Zod' }, admin);
  const id = created.data.id;
  const updated = await api.updateUser({ name: 'Renamed By Zod' }, { ...admin, params: { id } });
  await api.deleteUser(undefined, { ...admin, params: { id } });
  const restored = await api.restoreUser(undefined, { ...admin, params: { id } });

  return {
    registeredId: registered.data.user.id,
    meEmail: me.data.email,
    refreshedSid: sidOf(refreshed.data.refresh_token),
    pageMeta: page.meta,
    pageIds: page.data.map((user) => user.id),
    cursorIds: cursor.data.map((user) => user.id),
    cursorNext: cursor.meta.next_cursor,
    createdId: id,
    updatedName: updated.data.name,
    restoredDeletedAt: restored.data.deleted_at,
    meAfterLogout,
  };
}
