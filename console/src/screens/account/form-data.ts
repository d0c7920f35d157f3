/** A text field of a submitted form ('' when absent: the form has no file inputs). */
export function text(data: FormData, name: string): string {
  const value = data.get(name);
  return typeof value === 'string' ? value : '';
}
