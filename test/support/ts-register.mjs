// Lets a child process run the TypeScript sources directly: `node --import ./test/support/ts-register.mjs src/server.ts`.
// Cluster workers inherit it through execArgv. The sources import each other as `./x.js`, which names
// the compiled file: where only `./x.ts` exists, that is the file loaded, compiled by swc.
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
