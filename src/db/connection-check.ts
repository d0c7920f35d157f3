import type { Pool } from 'pg';

/**
 * The configured PostgreSQL cannot be reached or refuses the connection. The message is one line that
 * names the part of DATABASE_URL at fault (host and port, database, user, the URL itself) and never
 * holds the URL's password.
 */
export class DatabaseConnectionError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'DatabaseConnectionError';
  }
}

/**
 * Opens one connection from `pool` and hands it back (the pool keeps it for the first query), so that a
 * wrong DATABASE_URL stops a start with its reason instead of failing a migration or a request later.
 */
export async function checkConnection(pool: Pool, url: string, timeoutMs: number): Promise<void> {
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    throw new DatabaseConnectionError(describeConnectionFailure(url, error, timeoutMs), { cause: error });
  }
}

/** What the parts of the URL say, as pg reads them: the host and port it connects to, the database, the user. */
function target(url: string): { at: string; database: string } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const host = parsed.searchParams.get('host') ?? (decodeURIComponent(parsed.hostname) || 'localhost');
  const port = parsed.searchParams.get('port') ?? (parsed.port || '5432');
  const database = decodeURIComponent(parsed.pathname.slice(1));
  return { at: host.startsWith('/') ? `the socket in ${host}` : `${host.includes(':') ? `[${host}]` : host}:${port}`, database };
}

/** One line saying which part of DATABASE_URL failed and why. */
export function describeConnectionFailure(url: string, error: unknown, timeoutMs: number): string {
  const where = target(url);
  const { code, message } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; message?: unknown };
  const said = typeof message === 'string' ? message : String(error);
  if (where === undefined || code === 'ERR_INVALID_URL') {
    return 'DATABASE_URL is not a valid URL: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE (special characters in the password percent-encoded)';
  }
  const { at, database } = where;
  switch (code) {
    case 'ECONNREFUSED':
      return `cannot connect to PostgreSQL at ${at} (the host and port of DATABASE_URL): connection refused, nothing is listening there`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return `cannot connect to PostgreSQL at ${at}: the host of DATABASE_URL was not found (no such host name)`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `cannot connect to PostgreSQL at ${at} (the host and port of DATABASE_URL): host unreachable (${code})`;
    case '3D000':
      return `PostgreSQL at ${at} has no database "${database}" (the database name in DATABASE_URL): create it or correct the name`;
    case '28000':
    case '28P01':
      // The server's own words ("role "x" does not exist", "password authentication failed for user "x"") name the user, never the password.
      return `PostgreSQL at ${at} refused the user of DATABASE_URL: ${said}`;
  }
  if (/timeout/i.test(said)) {
    return `cannot connect to PostgreSQL at ${at} (the host and port of DATABASE_URL): no answer within ${timeoutMs / 1000} s`;
  }
  return `cannot connect to PostgreSQL at ${at} (DATABASE_URL): ${withoutPassword(said.split('\n')[0], url)}`;
}

/** A message from elsewhere, with the URL's password (should it appear) masked. */
function withoutPassword(text: string, url: string): string {
  const { password } = new URL(url);
  if (password === '') return text;
  return [password, decodeURIComponent(password)].reduce((masked, secret) => masked.split(secret).join('***'), text);
}
