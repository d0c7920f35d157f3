/** A log destination that keeps what the logger writes. */
export function captureLog() {
  let text = '';
  return {
    stream: { write: (chunk: string) => void (text += chunk) },
    get text() {
      return text;
    },
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, any>),
  };
}
