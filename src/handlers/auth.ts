import { created, notImplemented, ok, signedIn } from '../http/reply';
import type { Handler } from './types';
import { userView } from './views';

export const register: Handler<'register'> = async ({ body, client }, { auth }) => {
  const { user, tokens } = await auth.register(body, client);
  return created({ user: userView(user, user.role === 'admin'), ...tokens });
};

/** OAuth2 password grant: the token fields also stand at the top level (RFC 6749 §5.1). */
export const login: Handler<'login'> = async ({ body, client }, { auth }) => {
  const { tokens } = await auth.login(body.username, body.password, client);
  return ok(tokens, tokens);
};

export const loginJson: Handler<'loginJson'> = async ({ body, client }, { auth }) => {
  const { user, tokens } = await auth.login(body.email, body.password, client);
  return ok({ ...tokens, user: userView(user, user.role === 'admin') });
};

export const refreshToken: Handler<'refreshToken'> = async ({ body }, { auth }) => ok(await auth.refresh(body.refresh_token));

export const getMe: Handler<'getMe'> = async (input) => {
  const { user } = signedIn(input);
  return ok(userView(user, user.role === 'admin'));
};

export const logout: Handler<'logout'> = async (input, { auth }) => {
  const all = input.body?.all ?? false;
  await auth.logout(signedIn(input), all);
  return ok({ message: all ? 'Logged out of every session' : 'Logged out' });
};

export const changePassword: Handler<'changePassword'> = notImplemented;
export const forgotPassword: Handler<'forgotPassword'> = notImplemented;
export const resetPassword: Handler<'resetPassword'> = notImplemented;
export const verifyEmail: Handler<'verifyEmail'> = notImplemented;
export const resendVerification: Handler<'resendVerification'> = notImplemented;
export const listSessions: Handler<'listSessions'> = notImplemented;
export const revokeSession: Handler<'revokeSession'> = notImplemented;
