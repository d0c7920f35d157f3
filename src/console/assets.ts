import { createReadStream, existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import type { Middleware } from 'koa';

/**
 * The console's built files (`make build` writes them to console/dist) under /console: hashed
 * assets cached for a year, the page itself never cached, and every other path under /console
 * answered with the page (the console's own router reads it). Its Content-Security-Policy is
 * stricter than the service's: nothing inline, scripts, styles, images and requests from this origin only.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "base-uri 'none'",
  "connect-src 'self'",
  "font-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self'",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
  "style-src-attr 'none'",
].join(';');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

/** The folder of the built console: console/dist of the checkout or package this module runs from. */
export function consoleBuildFolder(from: string = import.meta.dirname): string | undefined {
  for (let folder = from; ; folder = dirname(folder)) {
    const candidate = join(folder, 'console', 'dist');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    if (existsSync(join(folder, 'package.json')) || dirname(folder) === folder) return undefined;
  }
}

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><main><h1>The console is not built</h1><p>Run <code>make build</code> (or <code>npm run build</code>) and restart the service.</p></main></body></html>`;

export function consoleAssets(folder: string | undefined = consoleBuildFolder()): Middleware {
  const root = folder === undefined ? undefined : resolve(folder);
  let page: Promise<string> | undefined;
  return async (ctx, next): Promise<void> => {
    if (ctx.path !== '/console' && !ctx.path.startsWith('/console/')) {
      await next();
      return;
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      await next();
      return;
    }
    ctx.set('Content-Security-Policy', CONSOLE_CONTENT_SECURITY_POLICY);
    if (ctx.path === '/console') {
      ctx.redirect('/console/');
      return;
    }
    if (root === undefined) {
      ctx.status = 503;
      ctx.type = 'text/html; charset=utf-8';
      ctx.set('Cache-Control', 'no-store');
      ctx.body = NOT_BUILT;
      return;
    }
    if (ctx.path.startsWith('/console/assets/')) {
      const file = resolve(root, `.${ctx.path.slice('/console'.length)}`);
      const size = file.startsWith(`${root}${sep}`)
        ? await stat(file).then(
            (s) => (s.isFile() ? s.size : undefined),
            () => undefined,
          )
        : undefined;
      if (size === undefined) {
        await next();
        return;
      }
      ctx.type = TYPES[extname(file)] ?? 'application/octet-stream';
      ctx.length = size;
      // Their names change with their content: a browser keeps them for a year without asking again.
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      ctx.body = ctx.method === 'HEAD' ? null : createReadStream(file);
      return;
    }
    page ??= readFile(join(root, 'index.html'), 'utf8');
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = await page;
  };
}
