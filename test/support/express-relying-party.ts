import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import type { ConfigParams } from 'express-openid-connect';

// An Express application signing people in with Auth0's express-openid-connect, in a process of its
// own, as an application is: the library is CommonJS that requires openid-client (ES modules only),
// which Node's own loader takes and the test runner's does not. Its page at / answers the signed-in person (`req.oidc.user`)
// and the algorithm of the ID token the library verified.

export interface ExpressRelyingParty {
  origin: string;
  close(): Promise<void>;
}

/** Starts the application on `port` (127.0.0.1) with express-openid-connect configured by `config`. */
export async function startExpressRelyingParty(port: number, config: ConfigParams): Promise<ExpressRelyingParty> {
  const child = spawn(process.execPath, ['--import', join(import.meta.dirname, 'ts-register.mjs'), import.meta.filename], {
    env: { PATH: process.env.PATH, RELYING_PARTY: JSON.stringify({ port, config }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the application exited with ${code}: ${output}`)));
  });
  return {
    origin: String(config.baseURL),
    async close() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill();
      await exited;
    },
  };
}

async function main(): Promise<void> {
  const { port, config } = JSON.parse(process.env.RELYING_PARTY!) as { port: number; config: ConfigParams };
  const express = (await import('express')).default;
  const { auth } = await import('express-openid-connect');
  const app = express();
  app.use(auth(config));
  app.get('/', (req, res) => {
    const idToken = req.oidc.idToken;
    const header = idToken ? (JSON.parse(Buffer.from(idToken.split('.')[0], 'base64url').toString('utf8')) as { alg: string }) : undefined;
    res.json({ user: req.oidc.user ?? null, alg: header?.alg ?? null });
  });
  app.listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
}

if (process.argv[1] === import.meta.filename) void main();
