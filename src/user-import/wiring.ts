import type { Core } from '../wiring/core.js';
import { UserImport } from './user-import.js';

/** Bringing users, with their password hashes, from another system. */
export function userImportRoom(core: Pick<Core, 'transact'>) {
  return { imports: new UserImport(core.transact) };
}
