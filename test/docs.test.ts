import request from 'supertest';
import { startTestApp, type TestContext } from './support/app.js';
import { document as contractFile } from './support/contract.js';
import { expectError } from './support/expect.js';

// The documentation routes are not part of the contract, so these requests go through supertest
// directly rather than the contract-checking helpers of the harness.

const ASSETS = [
  { path: '/docs/swagger-ui-bundle.js', type: /javascript/ },
  { path: '/docs/swagger-ui.css', type: /text\/css/ },
  { path: '/docs/swagger-init.js', type: /javascript/ },
  { path: '/redoc/redoc.standalone.js', type: /javascript/ },
];

/** The src/href values of the page's script and link tags. */
function referencedUrls(html: string): string[] {
  const urls: string[] = [];
  for (const match of html.matchAll(/<(script|link)\b[^>]*>/gi)) {
    const attr = /\b(?:src|href)\s*=\s*["']([^"']*)["']/i.exec(match[0]);
    if (attr) urls.push(attr[1]);
  }
  return urls;
}

describe('documentation, enabled', () => {
  let t: TestContext;
  let http: ReturnType<typeof request>;
  beforeAll(async () => {
    t = await startTestApp({ APP_VERSION: '9.8.7', MAX_PAGE_SIZE: '57', DEFAULT_PAGE_SIZE: '13' });
    http = request(t.app.koa.callback());
  });
  afterAll(() => t.close());

  describe('/openapi.json', () => {
    let doc: any;
    beforeAll(async () => {
      const res = await http.get('/openapi.json');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      doc = JSON.parse(res.text);
    });

    it('is OpenAPI 3.0.3 with info.version from APP_VERSION', () => {
      expect(doc.openapi).toBe('3.0.3');
      expect(doc.info.version).toBe('9.8.7');
      expect(typeof doc.info.title).toBe('string');
    });

    it('has the Auth, Users and Health tags', () => {
      const names = doc.tags.map((tag: { name: string }) => tag.name);
      expect(names).toEqual(expect.arrayContaining(['Auth', 'Users', 'Health']));
    });

    it('has the OAuth2 password flow and HTTP bearer security schemes', () => {
      const schemes = Object.values<any>(doc.components.securitySchemes);
      const oauth2 = schemes.find((scheme) => scheme.type === 'oauth2');
      expect(oauth2).toBeDefined();
      expect(oauth2.flows.password.tokenUrl).toBe('/api/auth/login');
      const bearer = schemes.find((scheme) => scheme.type === 'http');
      expect(bearer).toBeDefined();
      expect(bearer.scheme.toLowerCase()).toBe('bearer');
    });

    it('documents the protected operations with both schemes', () => {
      const security = doc.paths['/api/auth/me'].get.security as Record<string, unknown>[];
      const names = security.flatMap((requirement) => Object.keys(requirement));
      const schemes = doc.components.securitySchemes;
      expect(names.map((name) => schemes[name]?.type).sort()).toEqual(['http', 'oauth2']);
    });

    it('is api/openapi.yaml exactly, info.version aside (MAX_PAGE_SIZE and DEFAULT_PAGE_SIZE change nothing in it)', () => {
      const file = structuredClone(contractFile);
      file.info.version = '9.8.7';
      expect(doc).toEqual(file);
    });

    it('declares no default on a list parameter, so clients that send defaults never mix the page and cursor shapes', () => {
      const parameters = doc.paths['/api/users'].get.parameters as { name: string; schema: Record<string, unknown> }[];
      for (const name of ['page', 'per_page', 'cursor', 'limit']) {
        const parameter = parameters.find((p) => p.name === name);
        expect(parameter).toBeDefined();
        expect(parameter!.schema).not.toHaveProperty('default');
      }
    });

    it('leaves MAX_PAGE_SIZE to validation: 57 passes, 58 is a 422, for per_page and limit', async () => {
      const token = await t.adminToken();
      expect((await t.get('/api/users?per_page=57', { token })).status).toBe(200);
      expect((await t.get('/api/users?limit=57', { token })).status).toBe(200);
      for (const name of ['per_page', 'limit']) {
        const res = await t.get(`/api/users?${name}=58`, { token });
        expectError(res, 422, 'VALIDATION_ERROR');
        expect(res.body.error.details).toEqual([{ field: `query.${name}`, message: expect.stringContaining('57') }]);
      }
    });

    it('has every path the service answers, /health among them', () => {
      expect(doc.paths['/health']?.get).toBeDefined();
      expect(doc.paths['/health/']?.get).toBeDefined();
    });
  });

  describe.each([
    { page: '/docs', marker: /id=["']swagger-ui["']/ },
    { page: '/redoc', marker: /<redoc\b[^>]*spec-url=["']\/openapi\.json["']/ },
  ])('$page', ({ page, marker }) => {
    it('is an HTML page', async () => {
      const res = await http.get(page);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toMatch(/^<!doctype html>/i);
      expect(res.text).toMatch(marker);
    });

    it('references only local assets', async () => {
      const res = await http.get(page);
      const urls = referencedUrls(res.text);
      expect(urls.length).toBeGreaterThan(0);
      for (const url of urls) {
        expect(url).toMatch(/^\/(?!\/)/);
      }
      expect(res.text).not.toMatch(/<(script|link)\b[^>]*(src|href)\s*=\s*["'](https?:)?\/\//i);
    });

    it('has every referenced script and stylesheet served', async () => {
      const res = await http.get(page);
      for (const url of referencedUrls(res.text)) {
        const asset = await http.get(url);
        expect({ url, status: asset.status }).toEqual({ url, status: 200 });
      }
    });
  });

  it.each(ASSETS)('$path is served with a matching content type', async ({ path, type }) => {
    const res = await http
      .get(path)
      .buffer(true)
      .parse((response, done) => {
        let size = 0;
        response.on('data', (chunk: Buffer) => (size += chunk.length));
        response.on('end', () => done(null, size));
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(type);
    expect(res.body).toBeGreaterThan(0);
  });

  it('/redoc/redoc.standalone.js names no CDN: its sidebar logo is an inline image', async () => {
    const res = await http.get('/redoc/redoc.standalone.js');
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('cdn.redoc.ly');
    expect(res.text).toContain('data:image/svg+xml,');
  });

  it('/redoc keeps images to its own origin (the ReDoc bundle would load its logo from a CDN)', async () => {
    const res = await http.get('/redoc');
    const policy = String(res.headers['content-security-policy'] ?? '');
    const imgSrc = /(?:^|;)\s*img-src([^;]*)/.exec(policy);
    expect(imgSrc).not.toBeNull();
    const sources = imgSrc![1].trim().split(/\s+/);
    expect(sources).toContain("'self'");
    for (const source of sources) expect(["'self'", 'data:', 'blob:']).toContain(source);
  });

  it('the Swagger UI init script loads the served document', async () => {
    const res = await http.get('/docs/swagger-init.js');
    expect(res.text).toContain('/openapi.json');
    expect(res.text).toContain('SwaggerUIBundle');
  });
});

describe('documentation, disabled with DOCS_ENABLED=false', () => {
  let t: TestContext;
  let http: ReturnType<typeof request>;
  beforeAll(async () => {
    t = await startTestApp({ DOCS_ENABLED: 'false' });
    http = request(t.app.koa.callback());
  });
  afterAll(() => t.close());

  it.each(['/docs', '/redoc', '/openapi.json', ...ASSETS.map((asset) => asset.path)])('%s answers 404 NOT_FOUND', async (path) => {
    const res = await http.get(path);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
  });

  it('the API itself still works', async () => {
    const res = await t.get('/health/live');
    expect(res.status).toBe(200);
  });
});
