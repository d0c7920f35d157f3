import { createHash } from 'node:crypto';
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type { Pool, PoolClient } from 'pg';

/**
 * Statements PostgreSQL parses and plans once per connection instead of on every call, by SQL text.
 * Kysely sends every query unnamed, so the server parses and plans it each time; for the queries
 * every request runs that work is as large as the query itself.
 */
const names = new Map<string, string>();

/**
 * Registers `text` as a prepared statement named `name` and returns it unchanged. Name the columns
 * it returns rather than `*`: PostgreSQL refuses to run a prepared statement whose result columns
 * changed since it was prepared, as they would after a migration adds a column.
 */
export function preparedStatement(name: string, text: string): string {
  const existing = names.get(text);
  if (existing !== undefined && existing !== name) throw new Error(`statement "${name}" is already prepared as "${existing}"`);
  names.set(text, name);
  return text;
}

/**
 * Registers a statement built at run time (one shape of a list query, say) under a name derived from
 * its text, and returns the text. Shapes that differ only in their parameters share one name; the
 * name is worked out once per text, not per call.
 */
export function preparedShape(prefix: string, text: string): string {
  if (!names.has(text)) names.set(text, `${prefix}_${createHash('sha1').update(text).digest('hex').slice(0, 12)}`);
  return text;
}

/** Kysely's view of a pg pool, with the registered statements sent by name. */
export function preparingPool(pool: Pool): PostgresPool {
  const clients = new WeakMap<PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapped = clients.get(client);
      if (!wrapped) {
        wrapped = {
          query: ((text: unknown, values?: readonly unknown[]) => {
            const name = typeof text === 'string' ? names.get(text) : undefined;
            if (name === undefined) return client.query(text as string, values as unknown[]);
            return client.query({ name, text: text as string, values: values as unknown[] }) as unknown as Promise<
              PostgresQueryResult<unknown>
            >;
          }) as PostgresPoolClient['query'],
          release: () => client.release(),
        };
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
  };
}
