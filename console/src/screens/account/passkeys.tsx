import { useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../../api';
import { text } from './form-data';
import { Empty, Field, Form, Loading, Notice, Section, When, type Loaded } from '../../ui/kit';
import type { FactorList } from './factors';
import { RemoveFactor } from './factors';
import { useProven } from './reauth';

/**
 * The browser's own WebAuthn ceremony on the options the service gives (their JSON form) and the
 * answer sent back as the browser's toJSON() of the credential: no library in between.
 */
async function createPasskey(options: Schemas['WebAuthnCreationOptions']): Promise<Schemas['RegistrationCredential']> {
  if (typeof PublicKeyCredential === 'undefined' || typeof PublicKeyCredential.parseCreationOptionsFromJSON !== 'function')
    throw new Error('This browser cannot make passkeys. Use a current browser, or add an authenticator app instead.');
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options);
  let credential: Credential | null;
  try {
    credential = await navigator.credentials.create({ publicKey });
  } catch (failure) {
    if (failure instanceof DOMException && failure.name === 'NotAllowedError')
      throw new Error('No passkey was made: the browser’s prompt was cancelled or timed out.', { cause: failure });
    if (failure instanceof DOMException && failure.name === 'InvalidStateError')
      throw new Error('This authenticator already holds a passkey of your account.', { cause: failure });
    throw failure;
  }
  if (!(credential instanceof PublicKeyCredential)) throw new Error('The browser made no passkey.');
  return credential.toJSON() as Schemas['RegistrationCredential'];
}

/** Passkeys: they sign in on their own, and serve as a second factor after a password. */
export function Passkeys(props: { factors: Loaded<FactorList> }) {
  const proven = useProven();
  const [added, setAdded] = useState<string>();

  const add = async (data: FormData) => {
    const name = text(data, 'name').trim();
    setAdded(undefined);
    const options = await proven(() => ok(api.POST('/api/auth/passkeys/registration/options', { body: {} })));
    const credential = await createPasskey(options.data);
    const answer = await ok(api.POST('/api/auth/passkeys/registration', { body: name ? { credential, name } : { credential } }));
    setAdded(answer.data.name);
    props.factors.reload();
  };

  return (
    <Section title="Passkeys">
      <Form label="Add a passkey" submit="Add a passkey" action={add}>
        <Field label="Name of the passkey" hint="To tell your passkeys apart, e.g. Laptop. Your browser then asks you to make it.">
          <input name="name" maxLength={100} placeholder="Laptop" />
        </Field>
      </Form>
      {added ? <Notice>The passkey “{added}” is added: it signs you in without a password.</Notice> : null}
      <Loading loaded={props.factors} label="Loading your passkeys…">
        {(list) => {
          const passkeys = list.data.filter((factor) => factor.type === 'webauthn');
          if (passkeys.length === 0) return <Empty>No passkey yet: add one to sign in with your device instead of a password.</Empty>;
          return (
            <div class="table-wrap">
              <table>
                <caption>Passkeys</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Added</th>
                    <th scope="col">Last used</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {passkeys.map((factor) => (
                    <tr key={factor.id}>
                      <td>{factor.name}</td>
                      <td>
                        <When at={factor.created_at} />
                      </td>
                      <td>
                        <When at={factor.last_used_at} />
                      </td>
                      <td>
                        <RemoveFactor factor={factor} last={list.data.length === 1} onDone={() => props.factors.reload()} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          );
        }}
      </Loading>
    </Section>
  );
}
