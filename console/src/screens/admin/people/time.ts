/** A `datetime-local` input's value (the person's own zone) for a time; empty for none. */
export function localInputValue(at: Date | undefined): string {
  if (!at || Number.isNaN(at.getTime())) return '';
  const shifted = new Date(at.getTime() - at.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 16);
}

/** The time a `datetime-local` input holds, as the API's ISO 8601 with a zone; undefined when empty. */
export function isoOfLocalInput(value: string): string | undefined {
  if (!value) return undefined;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}

export const DAY_MS = 24 * 60 * 60 * 1000;
