import { Readable } from 'node:stream';
import { main } from '../../src/cli/index.js';
import { TEST_SECRET, type TestContext } from './app.js';

/**
 * Runs the command line in this process, on the database of `app` (stopped first, for the embedded
 * one, which serves one process), with empty stdin and `env` over the suite's settings.
 */
export async function cli(app: TestContext, args: string[], env: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdin: Readable.from([]),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { SECRET_KEY: TEST_SECRET, BCRYPT_COST: '4', LOG_LEVEL: 'silent', ...env, ...app.database.env },
  });
  return { code, stdout, stderr };
}
