import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { countByStatus, IMPORT_BATCH_SIZE, type ImportResult, type ImportRow } from '../user-import/user-import.js';
import { allowArguments, allowOptions, CommandError, UsageError, type Command, type Context, type Invocation } from './command.js';
import { commandServices } from './services.js';

/** A progress line every this many rows, for a file of any size. */
const PROGRESS_EVERY_ROWS = 10_000;

/**
 * `import-users FILE.jsonl`: one user per line, as the API's import takes them, a batch of rows per
 * transaction. Rows that were not created are listed (line, status, e-mail, reason); progress goes
 * to stderr. A batch committed stays: run again after an interruption and the rows already in come
 * back as conflicts. Fails (exit 1) when any row was invalid, once every other row is in.
 */
export function importUsersCommand(invocation: Invocation): Command {
  allowOptions(invocation);
  allowArguments(invocation, 1);
  const file = invocation.rest[0];
  if (file === undefined) throw new UsageError('import-users needs FILE.jsonl');
  return { migrated: true, run: (context) => importFile(context, file) };
}

async function importFile(context: Context, file: string): Promise<void> {
  const { io } = context;
  const { imports } = commandServices(context);
  const totals = { created: 0, conflict: 0, invalid: 0 };
  let rows = 0;
  const report = (results: ImportResult[]) => {
    for (const result of results) {
      if (result.status === 'created') continue;
      const reason = result.reason === undefined ? '' : `: ${result.reason}`;
      io.stdout.write(`line ${result.row}: ${result.status} ${result.email ?? '(no e-mail)'}${reason}\n`);
    }
    const counts = countByStatus(results);
    for (const status of ['created', 'conflict', 'invalid'] as const) totals[status] += counts[status];
  };
  const progress = () =>
    io.stderr.write(`${rows} rows: ${totals.created} created, ${totals.conflict} conflicts, ${totals.invalid} invalid\n`);

  let batch: ImportRow[] = [];
  const flush = async () => {
    const before = rows;
    rows += batch.length;
    report(await imports.importBatch(null, null, batch, 'cli'));
    batch = [];
    if (Math.floor(rows / PROGRESS_EVERY_ROWS) > Math.floor(before / PROGRESS_EVERY_ROWS)) progress();
  };
  for await (const { line, number } of linesOf(file)) {
    if (line.trim() === '') continue;
    batch.push({ row: number, value: parseLine(line) });
    if (batch.length >= IMPORT_BATCH_SIZE) await flush();
  }
  if (batch.length > 0) await flush();
  io.stdout.write(
    `imported ${file}: ${totals.created} created, ${totals.conflict} conflicts, ${totals.invalid} invalid, of ${rows} rows\n`,
  );
  if (totals.invalid > 0) {
    throw new CommandError(
      `${totals.invalid} row${totals.invalid === 1 ? ' was' : 's were'} invalid (listed above); every other row was imported`,
    );
  }
}

/** A line's JSON, or a marker the row check reports as not an object. */
function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return NOT_JSON;
  }
}
const NOT_JSON = Symbol('not JSON');

async function* linesOf(file: string): AsyncGenerator<{ line: string; number: number }> {
  const stream = createReadStream(file, { encoding: 'utf8' });
  // Opening errors (no such file) surface here with the path, rather than as an unhandled stream error.
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (error) => reject(new CommandError(`cannot read ${file}`, { cause: error })));
  });
  let number = 0;
  for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
    number++;
    yield { line, number };
  }
}
