import { created, noContent, ok, signedIn } from './reply.js';
import { countByStatus } from '../user-import/user-import.js';
import type { Handler } from './types.js';
import { importResultView, sessionView, userView } from './views.js';

export const listUsers: Handler<'listUsers'> = async (input, { users }) => {
  const { rows, meta } = await users.list(signedIn(input), input.query);
  return ok(
    rows.map((row) => userView(row, true)),
    { meta },
  );
};

export const getUser: Handler<'getUser'> = async (input, { users }) => {
  const me = signedIn(input);
  return ok(userView(await users.get(me, input.path.id), me.user.role === 'admin'));
};

export const createUser: Handler<'createUser'> = async (input, { users }) =>
  created(userView(await users.create(signedIn(input), input.body), true));

export const updateUser: Handler<'updateUser'> = async (input, { users }) => {
  const me = signedIn(input);
  return ok(userView(await users.update(me, input.path.id, input.body), me.user.role === 'admin'));
};

export const deleteUser: Handler<'deleteUser'> = async (input, { users }) => {
  await users.delete(signedIn(input), input.path.id);
  return noContent();
};

export const restoreUser: Handler<'restoreUser'> = async (input, { users }) =>
  ok(userView(await users.restore(signedIn(input), input.path.id), true));

export const importUsers: Handler<'importUsers'> = async (input, { imports }) => {
  const results = await imports.importUsers(signedIn(input), input.body.users);
  return ok(results.map(importResultView), { meta: countByStatus(results) });
};

export const listUserSessions: Handler<'listUserSessions'> = async (input, { userSessions }) => {
  const me = signedIn(input);
  const sessions = await userSessions.list(me, input.path.id);
  return ok(sessions.map((session) => sessionView(session, me.sessionId ?? '')));
};

export const revokeUserSession: Handler<'revokeUserSession'> = async (input, { userSessions }) => {
  await userSessions.revoke(signedIn(input), input.path.id, input.path.session_id);
  return noContent();
};
