import { CommandError, type CliIo } from './command.js';

/** ADMIN_PASSWORD, else a prompt on a terminal, else the first line of stdin. */
export async function readPassword(io: CliIo): Promise<string> {
  if (io.env.ADMIN_PASSWORD) return io.env.ADMIN_PASSWORD;
  if (io.stdin.isTTY && io.stdin.setRawMode) {
    const password = await promptHidden(io, 'Password: ');
    if ((await promptHidden(io, 'Repeat the password: ')) !== password) throw new CommandError('the two passwords differ');
    return password;
  }
  const line = await firstLine(io.stdin);
  if (line === undefined || line === '') {
    throw new CommandError('no password: set ADMIN_PASSWORD, run on a terminal, or write the password to stdin');
  }
  return line;
}

/** Reads a line from a terminal in raw mode, so that what is typed is not echoed. */
function promptHidden(io: CliIo, question: string): Promise<string> {
  const { stdin } = io;
  // Raw mode before the prompt: what is typed as soon as it shows must not be echoed either.
  stdin.setRawMode?.(true);
  io.stderr.write(question);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed: string[] = [];
    const finish = (error?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      io.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed.join(''));
    };
    const onData = (chunk: string | Buffer) => {
      for (const char of String(chunk)) {
        if (char === '\r' || char === '\n') return finish();
        // Ctrl-C, or Ctrl-D on an empty line: the user gives up.
        if (char === '\u0003' || (char === '\u0004' && typed.length === 0)) return finish(new CommandError('cancelled'));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else if (char >= ' ') typed.push(char);
      }
    };
    stdin.on('data', onData);
  });
}

/** The first line of a stream, without its line ending; undefined for an empty stream. */
async function firstLine(stream: NodeJS.ReadableStream): Promise<string | undefined> {
  let text = '';
  for await (const chunk of stream) {
    text += String(chunk);
    const end = text.search(/\r?\n/);
    if (end >= 0) return text.slice(0, end);
  }
  return text === '' ? undefined : text;
}
