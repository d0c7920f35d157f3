import type { Kysely, MigrationResult } from 'kysely';
import type { Config } from '../config/index.js';
import type { Database } from '../db/types.js';

/** Where the command reads and writes; a process passes its own, tests pass captured ones. */
export interface CliIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
}

export type Options = {
  email?: string;
  name?: string;
  user?: string;
  help?: boolean;
  type?: string;
  'redirect-uri'?: string[];
  'post-logout-redirect-uri'?: string[];
  grant?: string[];
  'first-party'?: boolean;
  slug?: string;
  'owner-email'?: string;
  role?: string;
};

/** A command as typed: its name, the words after it, its options, and the environment. */
export interface Invocation {
  name: string;
  rest: string[];
  options: Options;
  env: CliIo['env'];
}

/** Bad usage: exit 2 with the usage text. */
export class UsageError extends Error {}
/** A clear reason the command could not do its job: exit 1 with this message. */
export class CommandError extends Error {}

export interface Context {
  db: Kysely<Database>;
  kind: 'postgres' | 'embedded';
  /** The migrations applied as the database was opened; none unless the command asked for `migrated`. */
  applied: MigrationResult[];
  config: Config;
  io: CliIo;
}

/** A command whose arguments have been checked, ready to run on the database. */
export interface Command {
  /** Whether the database is brought up to date before the command runs. */
  migrated: boolean;
  run(context: Context): Promise<void>;
}

/** Refuses any option but `names`. */
export function allowOptions(invocation: Invocation, ...names: (keyof Options)[]): void {
  const extra = Object.keys(invocation.options).filter((name) => !names.includes(name as keyof Options));
  if (extra.length > 0) throw new UsageError(`${invocation.name} does not take --${extra[0]}`);
}

/** Refuses more than `count` words after the command. */
export function allowArguments(invocation: Invocation, count: number): void {
  if (invocation.rest.length > count) throw new UsageError(`unexpected argument "${invocation.rest[count]}"`);
}
