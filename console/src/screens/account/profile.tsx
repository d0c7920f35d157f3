import { useState } from 'preact/hooks';
import { api, ok } from '../../api';
import { text } from './form-data';
import { useMe } from '../../me';
import { Field, Form, Notice, Section } from '../../ui/kit';

/** The person's name, and their e-mail address: a new one stays pending until its link is followed. */
export function Profile() {
  const me = useMe();
  const { user } = me;
  const [done, setDone] = useState<string>();

  const rename = async (data: FormData) => {
    await ok(api.PUT('/api/users/{id}', { params: { path: { id: user.id } }, body: { name: text(data, 'name') } }));
    await me.refresh();
    setDone('Your name is saved.');
  };

  const changeEmail = async (data: FormData) => {
    const email = text(data, 'email');
    await ok(
      api.PUT('/api/users/{id}', {
        params: { path: { id: user.id } },
        body: { email, current_password: text(data, 'current_password') },
      }),
    );
    await me.refresh();
    setDone(
      email === user.email
        ? 'The pending change is withdrawn.'
        : `A link is on its way to ${email}: your address changes once it is followed. Until then you sign in with ${user.email}.`,
    );
  };

  return (
    <Section title="Profile">
      <dl class="facts">
        <dt>E-mail address</dt>
        <dd>
          {user.email} {user.email_verified ? <span class="badge ok">verified</span> : <span class="badge off">not verified</span>}
        </dd>
        {user.pending_email ? (
          <>
            <dt>Waiting for confirmation</dt>
            <dd>{user.pending_email}</dd>
          </>
        ) : null}
      </dl>
      {done ? <Notice>{done}</Notice> : null}
      <div class="account-forms">
        <Form label="Your name" submit="Save name" action={rename}>
          <Field label="Name">
            <input name="name" autocomplete="name" defaultValue={user.name} required maxLength={100} />
          </Field>
        </Form>
        <Form label="Change e-mail address" submit="Change address" action={changeEmail}>
          <Field label="New e-mail address" hint="A link is sent to it; the change takes effect once it is followed.">
            <input name="email" type="email" autocomplete="email" required />
          </Field>
          <Field label="Current password">
            <input name="current_password" type="password" autocomplete="current-password" required />
          </Field>
        </Form>
      </div>
    </Section>
  );
}
