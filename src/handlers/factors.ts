import { created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { factorView, tokenPairView, userView } from './views.js';

export const listFactors: Handler<'listFactors'> = async (input, { factors }) => {
  const { factors: rows, recoveryCodesRemaining } = await factors.list(signedIn(input));
  return ok(rows.map(factorView), { meta: { recovery_codes_remaining: recoveryCodesRemaining } });
};

export const deleteFactor: Handler<'deleteFactor'> = async (input, { factors }) => {
  await factors.remove(signedIn(input), input.path.id);
  return noContent();
};

export const enrolTotp: Handler<'enrolTotp'> = async (input, { factors }) => {
  const { factor, secret, otpauthUrl } = await factors.enrolTotp(signedIn(input), input.body?.name);
  return created({ factor_id: factor.id, secret, otpauth_url: otpauthUrl });
};

export const confirmTotp: Handler<'confirmTotp'> = async (input, { factors }) => {
  const { factor, recoveryCodes } = await factors.confirmTotp(signedIn(input), input.path.id, input.body.code);
  return ok({ factor: factorView(factor), ...(recoveryCodes ? { recovery_codes: recoveryCodes } : {}) });
};

export const regenerateRecoveryCodes: Handler<'regenerateRecoveryCodes'> = async (input, { factors }) =>
  ok({ recovery_codes: await factors.regenerateRecoveryCodes(signedIn(input)) });

export const verifyMfa: Handler<'verifyMfa'> = async ({ body, client }, { mfa }) => {
  const { user, tokens } = await mfa.verify(body, client);
  return ok({ ...tokenPairView(tokens), user: userView(user, user.role === 'admin') });
};

export const mfaWebauthnOptions: Handler<'mfaWebauthnOptions'> = async ({ body }, { mfa }) => ok(await mfa.webauthnOptions(body.mfa_token));

export const passkeyRegistrationOptions: Handler<'passkeyRegistrationOptions'> = async (input, { factors }) =>
  ok(await factors.passkeyRegistrationOptions(signedIn(input)));

export const registerPasskey: Handler<'registerPasskey'> = async (input, { factors }) =>
  created(factorView(await factors.registerPasskey(signedIn(input), input.body.credential, input.body.name)));

export const passkeyLoginOptions: Handler<'passkeyLoginOptions'> = async (_input, { mfa }) => {
  const { challengeId, options } = await mfa.passkeyLoginOptions();
  return ok({ challenge_id: challengeId, options });
};

export const passkeyLogin: Handler<'passkeyLogin'> = async ({ body, client }, { mfa }) => {
  const { user, tokens } = await mfa.passkeyLogin(body.challenge_id, body.credential, client);
  return ok({ ...tokenPairView(tokens), user: userView(user, user.role === 'admin') });
};

export const resetUserFactors: Handler<'resetUserFactors'> = async (input, { factors }) => {
  await factors.resetUser(signedIn(input), input.path.id);
  return noContent();
};
