import type { EmailCodeProof } from '../email-code/email-code-sign-in.js';
import { accepted, ok } from './reply.js';
import type { Handler } from './types.js';
import { tokenPairView, userView } from './views.js';

export const requestEmailCode: Handler<'requestEmailCode'> = async ({ body, client }, { emailCode }) => {
  emailCode.request(body.email, body.redirect_to, client);
  return accepted({ message: 'If the address can sign in, a code has been sent to it' });
};

export const verifyEmailCode: Handler<'verifyEmailCode'> = async ({ body, client }, { emailCode }) => {
  // The body is one flat object in the contract; validation held it to one proof's schema (`x-one-of`).
  const { user, tokens } = await emailCode.verify(body as EmailCodeProof, client);
  return ok({ ...tokenPairView(tokens), user: userView(user, user.role === 'admin') });
};
