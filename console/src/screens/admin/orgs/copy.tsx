import { useState } from 'preact/hooks';
import { Button, Field } from '../../../ui/kit';

/** A value to copy elsewhere (a DNS record, say): read-only, selected on focus, with a copy button. */
export function CopyField(props: { label: string; value: string; hint?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="copy-field">
      <Field label={props.label} hint={props.hint}>
        <input readOnly value={props.value} class="mono" onFocus={(event) => event.currentTarget.select()} />
      </Field>
      <Button
        aria-label={`Copy ${props.label.toLowerCase()}`}
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
