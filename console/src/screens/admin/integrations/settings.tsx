import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Form, Notice, When } from '../../../ui/kit';

/**
 * The settings of one item: a form whose fields start as the item is (`version`, its last change,
 * resets them after a save), that sends only what changed and says what a save means.
 */
export function SettingsForm<T extends object>(props: {
  label: string;
  version: string;
  /** The fields that differ from the item as it is. */
  changes: (data: FormData) => T;
  send: (changes: T) => Promise<void>;
  /** What a save means, said after it. */
  done: string;
  children: ComponentChildren;
}) {
  const [said, setSaid] = useState<string>();
  const save = async (data: FormData) => {
    setSaid(undefined);
    const changes = props.changes(data);
    if (Object.keys(changes).length === 0) {
      setSaid('Nothing to save: every field is as it was.');
      return;
    }
    await props.send(changes);
    setSaid(props.done);
  };
  return (
    <>
      <Form key={props.version} label={props.label} submit="Save changes" action={save}>
        {props.children}
      </Form>
      {said ? <Notice>{said}</Notice> : null}
    </>
  );
}

/** Whether a provider or an endpoint is in use. */
export function EnabledBadge(props: { enabled: boolean }) {
  return props.enabled ? <span class="badge ok">Enabled</span> : <span class="badge off">Disabled</span>;
}

/** When an item was made and last changed, as two entries of its facts list. */
export function Timestamps(props: { item: { created_at: string; updated_at: string } }) {
  return (
    <>
      <dt>Created</dt>
      <dd>
        <When at={props.item.created_at} />
      </dd>
      <dt>Changed</dt>
      <dd>
        <When at={props.item.updated_at} />
      </dd>
    </>
  );
}
