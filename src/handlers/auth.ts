import type { components } from '../../generated/openapi.js';
import type { ReauthenticationProof } from '../reauthentication/reauthentication.js';
import { sessionOf } from '../principal.js';
import { created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { accessTokenView, sessionView, tokenPairView, userView } from './views.js';

export const register: Handler<'register'> = async ({ body, client }, { auth }) => {
  const { user, tokens } = await auth.register(body, client);
  return created({ user: userView(user, user.role === 'admin'), ...(tokens && tokenPairView(tokens)) });
};

type LoginForm = components['schemas']['LoginForm'];
/** The token URL's form as one of its grants. */
type LoginGrant =
  | (LoginForm & { grant_type?: 'password'; username: string; password: string })
  | (LoginForm & { grant_type: 'refresh_token'; refresh_token: string });

/** The OAuth2 token URL, password and refresh grants: the token fields also stand at the top level (RFC 6749 §5.1). */
export const login: Handler<'login'> = async ({ body, client }, { auth }) => {
  // The form is one flat object in the contract; validation held it to one grant's schema (`x-one-of`).
  const grant = body as LoginGrant;
  const pair =
    grant.grant_type === 'refresh_token'
      ? await auth.refresh(grant.refresh_token, client)
      : (await auth.login(grant.username, grant.password, client, 'body.username')).tokens;
  const tokens = tokenPairView(pair);
  return ok(tokens, tokens);
};

export const loginJson: Handler<'loginJson'> = async ({ body, client }, { auth }) => {
  const { user, tokens } = await auth.login(body.email, body.password, client, 'body.email', body.organization_id);
  return ok({ ...tokenPairView(tokens), user: userView(user, user.role === 'admin') });
};

/** Answers as the token URL does, so that an OAuth2 client may use either as its refresh URL. */
export const refreshToken: Handler<'refreshToken'> = async ({ body, client }, { auth }) => {
  const tokens = tokenPairView(await auth.refresh(body.refresh_token, client, body.organization_id));
  return ok(tokens, tokens);
};

export const getMe: Handler<'getMe'> = async (input) => {
  const { user } = signedIn(input);
  return ok(userView(user, user.role === 'admin'));
};

export const logout: Handler<'logout'> = async (input, { auth }) => {
  const all = input.body?.all ?? false;
  await auth.logout(signedIn(input), all);
  return ok({ message: all ? 'Logged out of every session' : 'Logged out' });
};

export const changePassword: Handler<'changePassword'> = async (input, { account }) => {
  await account.changePassword(signedIn(input), input.body.current_password, input.body.new_password);
  return ok({ message: 'Password changed; every other session has been signed out' });
};

export const reauthenticate: Handler<'reauthenticate'> = async (input, { reauthentication }) =>
  // Validation held the body to one of the two proofs (`x-one-of`).
  ok(accessTokenView(await reauthentication.reauthenticate(signedIn(input), input.body as ReauthenticationProof)));

export const forgotPassword: Handler<'forgotPassword'> = async ({ body, client }, { account }) => {
  account.forgotPassword(body.email, client);
  return ok({ message: 'If the account exists, a reset link has been sent' });
};

export const resetPassword: Handler<'resetPassword'> = async ({ body, client }, { account }) => {
  await account.resetPassword(body.token, body.new_password, client);
  return ok({ message: 'Password has been reset; sign in with the new password' });
};

export const verifyEmail: Handler<'verifyEmail'> = async ({ body, client }, { account }) => {
  const user = await account.verifyEmail(body.token, client);
  return ok(userView(user, user.role === 'admin'));
};

export const resendVerification: Handler<'resendVerification'> = async (input, { account }) => {
  await account.resendVerification(signedIn(input));
  return ok({ message: 'Verification e-mail sent' });
};

export const listSessions: Handler<'listSessions'> = async (input, { account }) => {
  const me = signedIn(input);
  const current = sessionOf(me);
  const sessions = await account.listSessions(me);
  return ok(sessions.map((session) => sessionView(session, current)));
};

export const revokeSession: Handler<'revokeSession'> = async (input, { account }) => {
  await account.revokeSession(signedIn(input), input.path.id);
  return noContent();
};
