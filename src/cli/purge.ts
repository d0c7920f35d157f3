import { allowArguments, allowOptions, type Command, type Invocation } from './command.js';
import { commandServices } from './services.js';

/** `purge`: one whole housekeeping pass now. */
export function purgeCommand(invocation: Invocation): Command {
  allowOptions(invocation);
  allowArguments(invocation, 0);
  return {
    migrated: true,
    async run(context) {
      const { removed, status } = await commandServices(context).housekeeping.purge();
      for (const [table, count] of Object.entries(removed)) context.io.stdout.write(`${table.padEnd(16)}${count}\n`);
      if (status === 'busy') context.io.stdout.write('another process is purging this database now and does the rest\n');
    },
  };
}
