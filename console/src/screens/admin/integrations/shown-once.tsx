import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { Button, Secret, Section } from '../../../ui/kit';

/**
 * A secret the service has just made, shown this once: the person is told they will not see it
 * again, copies it, and dismisses it (leaving the page, or reloading it, forgets it too).
 */
export function ShownOnce(props: { title: string; label: string; value: string; children?: ComponentChildren; onDone: () => void }) {
  return (
    <Section title={props.title}>
      <p class="warning" role="status">
        Copy it now: you will not see it again. The service keeps only a sealed copy and never shows it; if it is lost, make a new one.
      </p>
      {props.children}
      <Secret label={props.label} value={props.value} />
      <div class="form-actions">
        <Button onClick={props.onDone}>I have copied it</Button>
      </div>
    </Section>
  );
}

/** Forgets a secret shown once as soon as its item's page is left (for the list, or another item). */
export function useForgetOnLeaving(item: string | number, forget: () => void): void {
  useEffect(() => forget, [item]);
}
