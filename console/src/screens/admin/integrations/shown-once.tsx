import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { Button, Secret, Section } from '../../../ui/kit';

/**
 * A secret the service has just made, shown this once: the person is told they will not see it
 * again, copies it, and dismisses it (leaving the page, or reloading it, forgets it too).
 */
export function ShownOnce(props: { title: string; label: string; value: string; children?: ComponentChildren; onDone: () => void }) {
  // The secret may appear far from the button that made it: it takes the focus, in view and selected.
  const wrapper = useRef<HTMLDivElement>(null);
  useEffect(() => {
    wrapper.current?.querySelector('input')?.focus();
  }, [props.value]);
  return (
    <div ref={wrapper}>
      <Section title={props.title}>
        <p class="warning" role="status">
          Copy it now: you will not see it again. The service keeps only a sealed copy and never shows it; if it is lost, make a new one.
        </p>
        {props.children}
        <Secret label={props.label} value={props.value} />
        <div class="form-actions">
          <Button
            onClick={() => {
              props.onDone();
              // The button goes with the secret: the focus goes back to the page's heading.
              document.getElementById('page-title')?.focus();
            }}
          >
            I have copied it
          </Button>
        </div>
      </Section>
    </div>
  );
}

/** Forgets a secret shown once as soon as its item's page is left (for the list, or another item). */
export function useForgetOnLeaving(item: string | number, forget: () => void): void {
  useEffect(() => forget, [item]);
}
