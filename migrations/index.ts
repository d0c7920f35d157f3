import type { Migration } from 'kysely';
import * as initial from './20261121000000_initial';

/** Every migration, by name; names sort in the order they run. */
export const migrations: Record<string, Migration> = {
  '20261121000000_initial': initial,
};
