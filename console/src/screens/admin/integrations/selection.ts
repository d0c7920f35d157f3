import { useEffect } from 'preact/hooks';
import { useSearchParams } from 'wouter-preact';

/**
 * The item a list screen shows on its own, named in the address (`/console/clients?client=…`), so
 * that an item's page can be bookmarked and reloaded; `open(undefined)` goes back to the list.
 */
export function useSelection(name: string): [string | undefined, (value: string | undefined) => void] {
  const [params, setParams] = useSearchParams();
  const value = params.get(name) ?? undefined;
  // The route stays the same, so the shell does not move the focus: the new heading takes it here.
  useEffect(() => {
    document.getElementById('page-title')?.focus({ preventScroll: true });
  }, [value]);
  const open = (next: string | undefined) => setParams(next === undefined ? {} : { [name]: next });
  return [value, open];
}

/** The address of an item's own page, for links: `/clients?client=…` under the console's base. */
export function selectionHref(path: string, name: string, value: string | number): string {
  return `${path}?${new URLSearchParams({ [name]: String(value) }).toString()}`;
}
