import type { Core } from '../wiring/core';
import { UserImport } from './user-import';

/** Bringing users, with their password hashes, from another system. */
export function userImportRoom(core: Pick<Core, 'transact'>) {
  return { imports: new UserImport(core.transact) };
}
