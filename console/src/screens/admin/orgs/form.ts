/** A text field of a submitted form, trimmed; empty when absent (or a file). */
export function textOf(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value.trim() : '';
}

/**
 * Permission strings as a person types them: one a line, or separated by commas or spaces; blanks
 * and repeats dropped, the order kept.
 */
export function permissionsOf(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter((permission) => permission !== ''))];
}
