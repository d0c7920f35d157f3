// The fetch orval's generated functions call (its `mutator`): the service's base URL in front of
// each path, and the answer as orval's response types describe it. Keeps each request body it
// sends, for the test to read what went over the wire.
export const sent: string[] = [];
let baseUrl = '';

export function setBaseUrl(url: string): void {
  baseUrl = url;
}

export async function orvalFetch<T>(path: string, init: RequestInit): Promise<T> {
  if (init.body !== undefined && init.body !== null) sent.push(String(init.body as string | URLSearchParams));
  const response = await fetch(`${baseUrl}${path}`, init);
  const text = await response.text();
  return { data: text === '' ? undefined : (JSON.parse(text) as unknown), status: response.status, headers: response.headers } as T;
}
