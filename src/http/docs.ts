import { createReadStream } from 'node:fs';
import { dirname, join } from 'node:path';
import Router from '@koa/router';
import type { OpenApiDocument } from './contract';

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
  '/redoc/redoc.standalone.js': { file: redocBundle, type: 'application/javascript; charset=utf-8' },
};

/** /docs (Swagger UI), /redoc (ReDoc) and /openapi.json, served from the same contract. */
export function docsRouter(document: OpenApiDocument): Router {
  const router = new Router();
  const json = JSON.stringify(document);
  const title = String(document.info.title ?? 'API');

  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = json;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html';
    ctx.body = page(
      `${title} – Swagger UI`,
      '<link rel="stylesheet" href="/docs/swagger-ui.css">\n<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">',
      '<div id="swagger-ui"></div>\n<script src="/docs/swagger-ui-bundle.js"></script>\n<script src="/docs/swagger-init.js"></script>',
    );
  });
  router.get('/docs/swagger-init.js', (ctx) => {
    ctx.type = 'application/javascript';
    ctx.body = SWAGGER_INIT;
  });
  router.get('/redoc', (ctx) => {
    ctx.type = 'text/html';
    // ReDoc's bundle always renders its sidebar logo from cdn.redoc.ly; the service-wide
    // Content-Security-Policy (src/http/security.ts) limits images to this origin, so the page
    // loads nothing from elsewhere (the blocked logo is then left out).
    ctx.body = page(
      `${title} – ReDoc`,
      '<style>body { margin: 0; padding: 0; }</style>',
      '<redoc spec-url="/openapi.json"></redoc>\n<script src="/redoc/redoc.standalone.js"></script>',
    );
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
