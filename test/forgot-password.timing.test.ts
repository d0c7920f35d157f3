import { answersInTheSameTime } from './support/answer-timing.js';

// Forgot-password answers before it looks the e-mail up, so an existing account and an unknown
// e-mail take the same time.
describe('forgot-password timing', () => {
  answersInTheSameTime({
    path: '/api/auth/forgot-password',
    status: 200,
    message: 'If the account exists, a reset link has been sent',
    settled: (t) => t.app.services.account.settled(),
  });
});
