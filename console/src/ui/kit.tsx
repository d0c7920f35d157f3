import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from '../api';

/** A screen: its heading (also the document's title), its actions, its content. */
export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · Console`;
  }, [props.title]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-header">
        <h1 id="page-title" tabIndex={-1}>
          {props.title}
        </h1>
        {props.actions ? <div class="actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
}

/** A part of a screen with its own heading. */
export function Section(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  const id = `section-${props.title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section class="card" aria-labelledby={id}>
      <header class="card-header">
        <h2 id={id}>{props.title}</h2>
        {props.actions ? <div class="actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/** Loads what `load` answers, again whenever `deps` change or `reload` is called. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => current && setState({ data, loading: false }),
      (error: unknown) => current && setState({ error, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** The API's message for a failure, announced to screen readers. */
export function ErrorMessage(props: { error: unknown }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {messageOf(props.error)}
    </p>
  );
}

/** Work under way, with an accessible name. */
export function Busy(props: { label: string; value?: number; max?: number }) {
  return (
    <div class="busy" role="status">
      <progress aria-label={props.label} value={props.value} max={props.max} />
      <span>{props.label}</span>
    </div>
  );
}

/** What a list shows when it has nothing, and what to do next. */
export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

/** A message that something happened, announced politely. */
export function Notice(props: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {props.children}
    </p>
  );
}

/** Loading, failure or the content, for anything `useLoad` loads. */
export function Loading<T>(props: { loaded: Loaded<T>; label: string; children: (data: T) => ComponentChildren }) {
  const { data, error, loading } = props.loaded;
  if (error) return <ErrorMessage error={error} />;
  if (data === undefined) return loading ? <Busy label={props.label} /> : null;
  return <>{props.children(data)}</>;
}

/** A labelled form control. */
export function Field(props: { label: string; hint?: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span class="field-label">{props.label}</span>
      {props.children}
      {props.hint ? <span class="field-hint">{props.hint}</span> : null}
    </label>
  );
}

type ButtonProps = JSX.ButtonHTMLAttributes<HTMLButtonElement> & { variant?: 'primary' | 'danger' | 'plain' };

export function Button({ variant, class: className, ...props }: ButtonProps) {
  return <button type="button" class={`button ${variant ?? 'plain'}${typeof className === 'string' ? ` ${className}` : ''}`} {...props} />;
}

/**
 * A form that runs `action` on submit, shows progress while it runs and the API's message when it
 * fails; `onDone` follows a success.
 */
export function Form(props: {
  label: string;
  submit: string;
  action: (data: FormData) => Promise<void>;
  children: ComponentChildren;
  variant?: 'primary' | 'danger';
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const onSubmit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setBusy(true);
    setError(undefined);
    try {
      await props.action(new FormData(form));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="form" aria-label={props.label} onSubmit={(event) => void onSubmit(event)}>
      {props.children}
      <ErrorMessage error={error} />
      <div class="form-actions">
        <button type="submit" class={`button ${props.variant ?? 'primary'}`} disabled={busy}>
          {props.submit}
        </button>
        {busy ? <Busy label="Working…" /> : null}
      </div>
    </form>
  );
}

/**
 * A button for something that cannot be undone: it opens a dialog that says what will happen and
 * asks to confirm; the API's message shows there when the action fails.
 */
export function ConfirmButton(props: {
  label: string;
  /** The dialog's question, e.g. "Delete ada@example.com?" */
  title: string;
  /** What will happen, in a sentence or two. */
  consequence: ComponentChildren;
  confirm?: string;
  variant?: 'danger' | 'primary' | 'plain';
  action: () => Promise<void>;
  /** An accessible name when the visible label is not enough (several in one table, say). */
  ariaLabel?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await props.action();
      dialog.current?.close();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button variant={props.variant ?? 'danger'} aria-label={props.ariaLabel} onClick={() => dialog.current?.showModal()}>
        {props.label}
      </Button>
      <dialog ref={dialog} class="dialog" aria-label={props.title} onClose={() => setError(undefined)}>
        <h2>{props.title}</h2>
        <div class="dialog-body">{props.consequence}</div>
        <ErrorMessage error={error} />
        <div class="form-actions">
          <Button variant={props.variant ?? 'danger'} disabled={busy} onClick={() => void run()}>
            {props.confirm ?? props.label}
          </Button>
          <Button onClick={() => dialog.current?.close()}>Cancel</Button>
          {busy ? <Busy label="Working…" /> : null}
        </div>
      </dialog>
    </>
  );
}

/** A secret shown once, with a button that copies it. */
export function Secret(props: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="secret">
      <Field label={props.label} hint="Shown only now: copy it and keep it somewhere safe.">
        <input readOnly value={props.value} class="mono" onFocus={(event) => event.currentTarget.select()} />
      </Field>
      <Button
        onClick={() =>
          void navigator.clipboard?.writeText(props.value).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        {copied ? 'Copied' : 'Copy'}
      </Button>
    </div>
  );
}

/** A time the API gave, in the person's own locale and zone. */
export function When(props: { at: string | null | undefined }) {
  if (!props.at) return <span>—</span>;
  const date = new Date(props.at);
  return <time dateTime={props.at}>{date.toLocaleString()}</time>;
}
