import { useState } from 'preact/hooks';
import { api, ok } from '../../api';
import { text } from './form-data';
import { signIn } from '../../auth';
import { Button, Field, Form, Notice, Section } from '../../ui/kit';

/**
 * A new password. The service then signs out every other session and every application, this
 * console's tokens included: the person signs in again with the new password.
 */
export function Password() {
  const [changed, setChanged] = useState(false);
  const change = async (data: FormData) => {
    await ok(
      api.POST('/api/auth/change-password', {
        body: { current_password: text(data, 'current_password'), new_password: text(data, 'new_password') },
      }),
    );
    setChanged(true);
  };
  return (
    <Section title="Password">
      {changed ? (
        <>
          <Notice>Your password is changed. Every other session and every application was signed out, this console too.</Notice>
          <div>
            <Button variant="primary" onClick={() => void signIn('/console/account')}>
              Sign in again
            </Button>
          </div>
        </>
      ) : (
        <Form label="Change password" submit="Change password" action={change}>
          <Field label="Current password">
            <input name="current_password" type="password" autocomplete="current-password" required />
          </Field>
          <Field label="New password" hint="Other sessions and applications are signed out.">
            <input name="new_password" type="password" autocomplete="new-password" required minLength={8} />
          </Field>
        </Form>
      )}
      {changed ? null : (
        <p class="field-hint">
          Signed up with an identity provider or an e-mailed code, and never set a password? Sign out, and use “Forgot your password?” on
          the sign-in page to set one.
        </p>
      )}
    </Section>
  );
}
