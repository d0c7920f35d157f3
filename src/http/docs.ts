import { createRequire } from 'node:module';
import { createReadStream, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { OpenApiDocument } from './contract.js';

const require = createRequire(import.meta.url);

const swaggerDir = dirname(require.resolve('swagger-ui-dist/package.json'));
const redocBundle = join(dirname(require.resolve('redoc/package.json')), 'bundles', 'redoc.standalone.js');

const page = (title: string, head: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
${head}
</head>
<body>
${body}
</body>
</html>
`;

const SWAGGER_INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    persistAuthorization: true,
    tryItOutEnabled: false,
    displayRequestDuration: true,
    oauth2RedirectUrl: window.location.origin + '/docs/oauth2-redirect.html',
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout'
  });
});
`;

/** Static files the pages load, all from installed packages: nothing comes from a CDN. */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/docs/swagger-ui.css': { file: join(swaggerDir, 'swagger-ui.css'), type: 'text/css; charset=utf-8' },
  '/docs/swagger-ui-bundle.js': { file: join(swaggerDir, 'swagger-ui-bundle.js'), type: 'application/javascript; charset=utf-8' },
  '/docs/oauth2-redirect.html': { file: join(swaggerDir, 'oauth2-redirect.html'), type: 'text/html; charset=utf-8' },
  '/docs/oauth2-redirect.js': { file: join(swaggerDir, 'oauth2-redirect.js'), type: 'application/javascript; charset=utf-8' },
  '/docs/favicon-32x32.png': { file: join(swaggerDir, 'favicon-32x32.png'), type: 'image/png' },
};

/** The logo ReDoc's bundle shows in its sidebar, fetched from Redocly's CDN on every page view. */
const REDOC_CDN_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
/** An empty image in its place: the page then asks nothing of any other origin. */
const EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='0' height='0'/%3E";

let localRedoc: string | undefined;
/** ReDoc's bundle with its one outside reference replaced, read once, when first asked for. */
function redocBundleWithoutCdn(): string {
  localRedoc ??= readFileSync(redocBundle, 'utf8').replaceAll(REDOC_CDN_LOGO, EMPTY_IMAGE);
  return localRedoc;
}

/** /docs (Swagger UI), /redoc (ReDoc) and /openapi.json, served from the same contract. */
export function docsRouter(document: OpenApiDocument): Router {
  const router = new Router();
  const json = JSON.stringify(document);
  const title = String(document.info.title ?? 'API');

  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = json;
  });
  const html = (body: string) => (ctx: Context) => {
    ctx.type = 'text/html';
    ctx.body = body;
  };
  router.get(
    '/docs',
    html(
      page(
        `${title} – Swagger UI`,
        '<link rel="stylesheet" href="/docs/swagger-ui.css">\n<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">',
        '<div id="swagger-ui"></div>\n<script src="/docs/swagger-ui-bundle.js"></script>\n<script src="/docs/swagger-init.js"></script>',
      ),
    ),
  );
  router.get('/docs/swagger-init.js', (ctx) => {
    ctx.type = 'application/javascript';
    ctx.body = SWAGGER_INIT;
  });
  // ReDoc's bundle always renders its sidebar logo from cdn.redoc.ly: the bundle is served with
  // that address replaced (redocBundleWithoutCdn), and the service-wide Content-Security-Policy
  // (src/http/security.ts) would stop any other outside request.
  router.get(
    '/redoc',
    html(
      page(
        `${title} – ReDoc`,
        '<style>body { margin: 0; padding: 0; }</style>',
        '<redoc spec-url="/openapi.json"></redoc>\n<script src="/redoc/redoc.standalone.js"></script>',
      ),
    ),
  );
  router.get('/redoc/redoc.standalone.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = redocBundleWithoutCdn();
  });
  for (const [path, asset] of Object.entries(ASSETS)) {
    router.get(path, (ctx) => {
      ctx.type = asset.type;
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.body = createReadStream(asset.file);
    });
  }
  return router;
}
