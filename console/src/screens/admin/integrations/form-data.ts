/** A text field of a submitted form, trimmed ('' when absent). */
export function text(data: FormData, name: string): string {
  const value = data.get(name);
  return typeof value === 'string' ? value.trim() : '';
}

/** A text area holding one value a line (or separated by spaces): its non-empty values, in order. */
export function lines(data: FormData, name: string): string[] {
  return text(data, name)
    .split(/\s+/)
    .filter((line) => line !== '');
}

/** The values of the checked boxes named `name`. */
export function checked<T extends string>(data: FormData, name: string): T[] {
  return data.getAll(name).filter((value): value is T => typeof value === 'string');
}

/** Whether the single check box `name` is checked. */
export function isOn(data: FormData, name: string): boolean {
  return data.get(name) === 'on';
}

/** Whether two lists hold the same values in the same order. */
export function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/** Whether two lists hold the same values, in any order. */
export function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value) => b.includes(value));
}
