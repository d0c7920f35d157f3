// Runs against a client openapi-typescript-codegen generated from api/openapi.yaml (into ../codegen).
// Its list method sends the declared defaults of `sort` and `order` on every call, cursor shape too.
// Its fetch client sends the form login as multipart/form-data, whatever media type comes first.
import { ApiError, AuthService, OpenAPI, UsersService } from '../codegen/index.js';
import { check, sidOf, type FlowInput, type FlowResult } from './flow.js';

export async function run(input: FlowInput): Promise<FlowResult> {
  OpenAPI.BASE = input.baseUrl;
  OpenAPI.TOKEN = undefined;

  const registered = await AuthService.register({
    requestBody: { email: input.email, password: input.password, name: 'Open Api Codegen' },
  });
  const signedIn = await AuthService.login({ formData: { username: input.email, password: input.password } });
  OpenAPI.TOKEN = signedIn.access_token;
  const me = await AuthService.getMe();

  const refreshed = await AuthService.refreshToken({ requestBody: { refresh_token: signedIn.refresh_token } });
  OpenAPI.TOKEN = refreshed.data.access_token;
  await AuthService.logout({ requestBody: { all: false } });
  let meAfterLogout = 0;
  try {
    await AuthService.getMe();
  } catch (error) {
    check(error instanceof ApiError, `me after logout threw ${String(error)}`);
    meAfterLogout = error.status;
  }

  const admin = await AuthService.loginJson({ requestBody: input.admin });
  OpenAPI.TOKEN = admin.data.access_token;
  const page = await UsersService.listUsers({ page: 1, perPage: 2, sort: 'id', order: 'asc' });
  check('page' in page.meta, 'page list without page meta');
  const cursor = await UsersService.listUsers({ cursor: 0, limit: 2 });
  check('next_cursor' in cursor.meta, 'cursor list without cursor meta');

  const created = await UsersService.createUser({
    requestBody: { email: input.newEmail, password: input.password, name: 'Created By Codegen' },
  });
  const id = created.data.id;
  const updated = await UsersService.updateUser({ id, requestBody: { name: 'Renamed By Codegen' } });
  await UsersService.deleteUser({ id });
  const restored = await UsersService.restoreUser({ id });
  OpenAPI.TOKEN = undefined;

  return {
    registeredId: registered.data.user.id,
    meEmail: me.data.email,
    refreshedSid: sidOf(refreshed.refresh_token),
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
