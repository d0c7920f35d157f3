import { createContext, type ComponentChildren } from 'preact';
import { useContext, useRef, useState } from 'preact/hooks';
import { api, ApiFailure, ok } from '../../api';
import { text } from './form-data';
import { Busy, Button, ErrorMessage, Field } from '../../ui/kit';

/**
 * Proof of presence before a new way in (a TOTP app, a passkey, recovery codes, an API key): the
 * service answers 403 REAUTH_REQUIRED when the sign-in is older than a few minutes. `proven(call)`
 * runs the call; on that answer it asks for the password (or a code of an authenticator app) in a
 * dialog, renews the session's proof with POST /api/auth/reauthenticate, and runs the call again.
 * The console's access token is the session's, so the renewed proof counts for it at once.
 */
export type Proven = <T>(call: () => Promise<T>) => Promise<T>;

const ReauthContext = createContext<Proven>((call) => call());

export function useProven(): Proven {
  return useContext(ReauthContext);
}

/** Cancelled by the person: said in the place the action was started. */
export class ProofCancelled extends Error {
  constructor() {
    super('Cancelled: the service asks you to confirm it is you before adding a way to sign in.');
  }
}

interface Pending {
  resolve(): void;
  reject(error: unknown): void;
}

export function ReauthProvider(props: { children: ComponentChildren }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const pending = useRef<Pending | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [useCode, setUseCode] = useState(false);

  const askForProof = () =>
    new Promise<void>((resolve, reject) => {
      pending.current = { resolve, reject };
      setError(undefined);
      dialog.current?.showModal();
    });

  const proven: Proven = async (call) => {
    try {
      return await call();
    } catch (failure) {
      if (!(failure instanceof ApiFailure && failure.code === 'REAUTH_REQUIRED')) throw failure;
      await askForProof();
      return call();
    }
  };

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const secret = text(new FormData(form), 'proof');
    setBusy(true);
    setError(undefined);
    try {
      await ok(api.POST('/api/auth/reauthenticate', { body: useCode ? { code: secret } : { password: secret } }));
      form.reset();
      const waiting = pending.current;
      pending.current = undefined;
      dialog.current?.close();
      waiting?.resolve();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  // Closing the dialog any other way (Cancel, Escape) gives up the action that asked.
  const onClose = () => {
    const waiting = pending.current;
    pending.current = undefined;
    waiting?.reject(new ProofCancelled());
  };

  return (
    <ReauthContext.Provider value={proven}>
      {props.children}
      <dialog ref={dialog} class="dialog" aria-labelledby="reauth-title" onClose={onClose}>
        <h2 id="reauth-title">Confirm it is you</h2>
        <form class="form" aria-label="Confirm it is you" onSubmit={(event) => void submit(event)}>
          <p class="dialog-body">
            This adds a way to sign in to your account, and your sign-in is more than a few minutes old.{' '}
            {useCode ? 'Enter a code from your authenticator app, or a recovery code.' : 'Enter your password.'}
          </p>
          {useCode ? (
            <Field label="Code">
              <input name="proof" autocomplete="one-time-code" inputMode="text" required />
            </Field>
          ) : (
            <Field label="Password">
              <input name="proof" type="password" autocomplete="current-password" required />
            </Field>
          )}
          <p class="field-hint">
            Without a password or an authenticator app, sign out and sign in again, then try again within five minutes.
          </p>
          <ErrorMessage error={error} />
          <div class="form-actions">
            <button type="submit" class="button primary" disabled={busy}>
              Confirm
            </button>
            <Button onClick={() => setUseCode(!useCode)}>{useCode ? 'Use my password' : 'Use a code instead'}</Button>
            <Button onClick={() => dialog.current?.close()}>Cancel</Button>
            {busy ? <Busy label="Checking…" /> : null}
          </div>
        </form>
      </dialog>
    </ReauthContext.Provider>
  );
}
