import { answersInTheSameTime } from './support/answer-timing.js';

// A request for an e-mailed code answers before it looks the address up, so an existing account and
// an unknown e-mail take the same time, though only the account is sent a code.
describe('email-code timing', () => {
  answersInTheSameTime({
    path: '/api/auth/email-code',
    status: 202,
    message: 'If the address can sign in, a code has been sent to it',
    settled: (t) => t.app.services.emailCode.settled(),
  });
});
