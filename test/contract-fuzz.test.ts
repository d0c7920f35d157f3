import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import jwt from 'jsonwebtoken';
import { ADMIN, startTestApp, TEST_SECRET, type Options, type Response, type TestContext } from './support/app.js';
import { document, resolve } from './support/contract.js';

/*
 * Contract fuzzing: every operation of api/openapi.yaml gets invalid and boundary input in its
 * body, query, path and credentials. Whatever arrives, the answer is one the contract documents
 * (the harness checks status, content type and schema of every response), in the envelope, and
 * never a 5xx: a 503 is not expected either, the database is up.
 *
 * FUZZ_RUNS scales the number of cases per operation (100 on each database, each run with a new
 * seed, so that the two databases see different cases); FUZZ_SEED replays a run; FUZZ_SHRINK=1
 * shrinks a failure to a smaller example; FUZZ_DEBUG=<text> logs every request whose operation
 * label contains the text.
 */

type Json = Record<string, any>;

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const FOREIGN_SECRET = 'another-secret-that-is-long-enough-for-hs256!';

// ---------------------------------------------------------------------------------------------
// The contract, read as data

/** A schema with every `$ref` replaced by what it names (the contract has no cycles). */
function deref(schema: Json | undefined): Json {
  const node = resolve(schema) ?? {};
  const out: Json = { ...node };
  if (node.properties) out.properties = Object.fromEntries(Object.entries<Json>(node.properties).map(([k, v]) => [k, deref(v)]));
  if (node.items) out.items = deref(node.items);
  return out;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: Json;
}

interface Operation {
  id: string;
  method: string;
  template: string;
  parameters: Parameter[];
  body?: { mediaType: string; schema: Json; required: boolean };
  secured: boolean;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

const operations: Operation[] = Object.entries<Json>(document.paths).flatMap(([template, item]) => {
  const shared = (item.parameters ?? []) as Json[];
  return (
    Object.entries<Json>(item)
      .filter(([method]) => METHODS.includes(method))
      // The OpenID Connect provider's endpoints speak OAuth 2.0, not the API's envelope; its tests drive them.
      .filter(([, op]) => op['x-served-by'] === undefined)
      .map(([method, op]): Operation => {
        const parameters = [...shared, ...((op.parameters ?? []) as Json[])].map((p) => {
          const param = resolve(p);
          return { name: param.name, in: param.in, required: Boolean(param.required), schema: deref(param.schema) };
        });
        const content = op.requestBody ? resolve(op.requestBody) : undefined;
        const mediaType = content ? Object.keys(content.content)[0] : undefined;
        return {
          id: op.operationId,
          method: method.toUpperCase(),
          template,
          parameters,
          body:
            content && mediaType
              ? { mediaType, schema: deref(content.content[mediaType].schema), required: Boolean(content.required) }
              : undefined,
          secured: Array.isArray(op.security) && op.security.length > 0,
        };
      })
  );
});

// ---------------------------------------------------------------------------------------------
// Values

const INJECTIONS = [
  "' OR '1'='1",
  "'; DROP TABLE users; --",
  '" OR ""="',
  '1; SELECT pg_sleep(5)',
  "admin@example.com' --",
  '%',
  '_',
  '\\',
  '%_\\%',
  '{"$ne": null}',
  '{"__proto__": {"role": "admin"}}',
  '__proto__',
  'constructor',
  '../../../../etc/passwd',
  '..%2F..%2F..%2Fetc%2Fpasswd',
  '%00',
  '<script>alert(1)</script>',
  '${7*7}',
  '{{7*7}}',
  'null',
  'undefined',
  'NaN',
  'true',
  '[]',
  '{}',
  '\r\nX-Injected: yes',
  'a\u0000b',
  '\u0000',
  'admin@example.com\u0000',
  '\uFEFFadmin@example.com',
  '\u202Egnp.exe',
  '\uD800',
  '\uDFFF\uD800',
  'Z͑ͫ̓ͪ̂ͫ̽͏̴̙̤̞͉͚̯̞̠͍',
  '👩‍👩‍👧‍👦',
  '𝕒𝕕𝕞𝕚𝕟',
  'ＡＤＭＩＮ＠ｅｘａｍｐｌｅ．ｃｏｍ',
  'İstanbul',
  'ß@example.com',
  '   ',
  '\t\n',
  '',
];

const EMAILS = [
  ADMIN.email,
  ADMIN.email.toUpperCase(),
  ` ${ADMIN.email} `,
  'a@b.co',
  'user@example.com',
  'no-at-sign',
  '@example.com',
  'a@',
  'a@b',
  'a..b@example.com',
  `${'a'.repeat(64)}@${'b'.repeat(63)}.com`,
  `${'a'.repeat(250)}@x.io`,
  'user+tag@example.com',
  'user@[127.0.0.1]',
  'üser@exämple.com',
  'a@b.c\u0000',
];

const lengthAround = (n: number) => fc.constantFrom(Math.max(0, n - 1), n, n + 1);

/** Strings that stress a parser or a database: odd unicode, NUL, injection shapes, sizes. */
const weirdString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...INJECTIONS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  {
    weight: 1,
    arbitrary: fc.string({ unit: fc.constantFrom('\u0000', '\u0001', '\u007f', '\u200b', '\uffff', '\uD83D', 'a', ' '), maxLength: 20 }),
  },
  // Large: up to 10k characters, ASCII or not.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('a', 'é', '𝕒', '%', "'", '\u0000'), fc.integer({ min: 100, max: 10_000 }))
      .map(([c, n]) => c.repeat(Math.ceil(n / c.length))),
  },
);

const hugeNumber = fc.constantFrom(
  0,
  -0,
  -1,
  1,
  2147483647,
  2147483648,
  -2147483649,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  1e308,
  -1e308,
  5e-324,
  1.5,
  0.1,
);

/** JSON of any shape, nested a few levels. */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: hugeNumber },
  { weight: 2, arbitrary: weirdString },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }).map((depth) => nest(depth)) },
);

function nest(depth: number): unknown {
  let value: unknown = 'deep';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { nested: value };
  return value;
}

/**
 * Values for a schema: mostly near its edges, often of the wrong type or shape. Made once per schema:
 * query strings ask for them case by case, and making a string arbitrary costs far more than drawing
 * from it.
 */
const valueArbitraries = new WeakMap<Json, fc.Arbitrary<unknown>>();
function valueFor(schema: Json): fc.Arbitrary<unknown> {
  let arbitrary = valueArbitraries.get(schema);
  if (!arbitrary) valueArbitraries.set(schema, (arbitrary = makeValueFor(schema)));
  return arbitrary;
}

function makeValueFor(schema: Json): fc.Arbitrary<unknown> {
  const plausible: fc.Arbitrary<unknown>[] = [];
  if (schema.enum)
    plausible.push(
      fc.constantFrom(...schema.enum),
      fc.constantFrom(...schema.enum).map((v: unknown) => String(v).toUpperCase()),
    );
  switch (schema.type) {
    case 'string': {
      if (schema.format === 'email') plausible.push(fc.constantFrom(...EMAILS), fc.emailAddress());
      if (schema.format === 'uuid') plausible.push(fc.uuid());
      if (schema.format === 'password')
        plausible.push(fc.constantFrom(ADMIN.password, 'Quartz-Lantern-4821', 'password', 'x'.repeat(72), 'é'.repeat(36), 'é'.repeat(37)));
      const max = typeof schema.maxLength === 'number' ? schema.maxLength : 200;
      const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
      plausible.push(
        lengthAround(max).map((n) => 'x'.repeat(n)),
        lengthAround(min).map((n) => 'y'.repeat(n)),
        fc.string({ minLength: min, maxLength: Math.min(max, 60) }),
        fc.constantFrom('id', 'email', 'name', 'created_at', 'updated_at', 'asc', 'desc', 'DESC'),
      );
      break;
    }
    case 'integer':
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -100;
      const max = typeof schema.maximum === 'number' ? schema.maximum : 100;
      plausible.push(lengthAround(min), lengthAround(max), fc.integer({ min, max: Math.min(max, min + 50) }), hugeNumber);
      plausible.push(fc.constantFrom('1', '01', '1e2', '0x10', ' 2 ', '-1', '1.0'));
      break;
    }
    case 'boolean':
      plausible.push(fc.boolean(), fc.constantFrom('true', 'false', 0, 1, 'yes'));
      break;
    default:
      plausible.push(anyJson);
  }
  return fc.oneof(
    { weight: 5, arbitrary: fc.oneof(...plausible) },
    { weight: 2, arbitrary: weirdString },
    { weight: 2, arbitrary: anyJson },
  );
}

/** An object for an object schema: fields dropped, extra fields added, values from valueFor. */
function objectFor(schema: Json): fc.Arbitrary<Record<string, unknown>> {
  const properties = Object.entries<Json>(schema.properties ?? {});
  const fields = fc.tuple(
    ...properties.map(([name, property]) =>
      // fc.option: one time in `freq` the field is left out.
      fc.option(
        valueFor(property).map((value) => [name, value] as const),
        { nil: undefined, freq: 4 },
      ),
    ),
  );
  const extra = fc.oneof(
    { weight: 6, arbitrary: fc.constant({}) },
    {
      weight: 2,
      arbitrary: fc.dictionary(
        fc.oneof(
          weirdString.filter((k) => k.length < 200),
          fc.constantFrom('__proto__', 'constructor', 'id', 'role', 'admin', 'password_hash', 'deleted_at'),
        ),
        anyJson,
        { maxKeys: 3 },
      ),
    },
  );
  return fc.tuple(fields, extra).map(([entries, more]) => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(more))
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    for (const entry of entries) if (entry) out[entry[0]] = entry[1];
    return out;
  });
}

/**
 * A value the service would accept for a field, so that a body gets past validation and a single
 * odd field reaches the handler and the database. Credentials are the current ones.
 */
function validValueFor(name: string, schema: Json): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.type === 'boolean') return fc.boolean();
  switch (name) {
    case 'email':
    case 'username':
      return schema.format === 'email'
        ? fc.oneof(
            fc.uuid().map((u) => `fuzz-${u.slice(0, 13)}@example.com`),
            fc.constant(0).map(() => known.userEmail),
          )
        : fc.oneof(
            fc.constant(ADMIN.email),
            fc.constant(0).map(() => known.userEmail),
            fc.constant('nobody@example.com'),
          );
    case 'password':
    case 'current_password':
      return schema.minLength === 8
        ? fc.constantFrom(USER_PASSWORD, 'Another-Long-Passphrase-77')
        : fc.constantFrom(ADMIN.password, USER_PASSWORD, 'wrong-password-123');
    case 'new_password':
      return fc.constantFrom(USER_PASSWORD, 'Another-Long-Passphrase-77');
    case 'name':
      return fc.constantFrom('Fuzz User', 'Ada', 'Ω');
    case 'refresh_token':
      return fc.constant(0).map(() => known.refreshToken);
    case 'token':
      return fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('base64url'));
    default:
      return schema.type === 'string' ? fc.constantFrom('', 'password', 'x') : anyJson;
  }
}

/** A valid body with one or two fields swapped for odd values, maybe one left out, maybe one added. */
function nearValid(schema: Json): fc.Arbitrary<Record<string, unknown>> {
  const properties = Object.entries<Json>(schema.properties ?? {});
  if (properties.length === 0) return fc.constant({});
  const base = fc.record(Object.fromEntries(properties.map(([name, property]) => [name, validValueFor(name, property)])), {
    requiredKeys: (schema.required ?? []) as never[],
  });
  const odd = fc.oneof({ weight: 4, arbitrary: weirdString }, { weight: 1, arbitrary: anyJson });
  const names = fc.constantFrom(...properties.map(([name]) => name));
  // Now and then unchanged, so that the success paths are walked too.
  const changes = fc.oneof(
    { weight: 1, arbitrary: fc.constant([]) },
    { weight: 2, arbitrary: fc.array(fc.tuple(names, odd), { minLength: 1, maxLength: 2 }) },
  );
  const rarely = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
  const extra = rarely(fc.tuple(fc.constantFrom('id', 'role', 'is_admin', 'password_hash', '__proto__', 'extra'), anyJson));
  return fc.tuple(base, changes, rarely(names), extra).map(([valid, swaps, dropped, added]) => {
    const out: Record<string, unknown> = { ...valid };
    for (const [name, value] of swaps) out[name] = value;
    if (dropped) delete out[dropped];
    if (added) Object.defineProperty(out, added[0], { value: added[1], enumerable: true, writable: true, configurable: true });
    return out;
  });
}

/** A request body: usually an object shaped after the schema, sometimes not an object at all. */
function bodyFor(schema: Json): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 10, arbitrary: nearValid(schema) },
    { weight: 4, arbitrary: objectFor(schema) },
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: anyJson },
    { weight: 1, arbitrary: fc.array(objectFor(schema), { maxLength: 3 }) },
  );
}

/** A path segment as a client might send it, percent-encoded (dots too, so no segment is `..`). */
function segment(value: unknown): string {
  const text = wellFormed(String(value));
  return encodeURIComponent(text).replace(/\./g, '%2E') || '%20';
}

/**
 * Query values are text, and Node refuses a request line over its header limit (431) before the
 * app sees it: keep each value within about 1000 bytes once percent-encoded.
 */
function fitForUrl(text: string): string {
  let points = Array.from(text);
  while (points.length > 0 && encodeURIComponent(points.join('')).length > 1000) points = points.slice(0, Math.floor(points.length / 2));
  return points.join('');
}

/** Lone surrogates have no UTF-8 form; a client would send U+FFFD. */
function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

// ---------------------------------------------------------------------------------------------
// The app, its people and their credentials

let t: TestContext;
let adminRow: Json;
const USER_PASSWORD = 'Quartz-Lantern-4821';
const known = {
  ids: [] as number[],
  sessions: [] as string[],
  adminToken: '',
  userToken: '',
  userId: 0,
  userEmail: '',
  deletedUserToken: '',
  refreshToken: '',
  /** API keys of the current user: one that may write, one read-only. */
  userKey: '',
  readOnlyKey: '',
};
/** Ids a path may name: the people made at the start, the admin, and the current user. */
const knownIds = () => [...known.ids, known.userId];
let requests = 0;

const now = () => Math.floor(Date.now() / 1000);
/** Signs any claims, odd ones included (jsonwebtoken refuses to sign a non-numeric exp). */
function sign(claims: Json, secret = TEST_SECRET, algorithm: 'HS256' | 'HS512' = 'HS256'): string {
  const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url');
  const unsigned = `${encode({ alg: algorithm, typ: 'JWT' })}.${encode(claims)}`;
  return `${unsigned}.${createHmac(algorithm === 'HS256' ? 'sha256' : 'sha512', secret)
    .update(unsigned)
    .digest('base64url')}`;
}

/** The Authorization header: missing, valid (admin or user), or anything but valid. */
function authorization(): fc.Arbitrary<Record<string, string>> {
  const bearer = (token: () => string) => fc.constant(0).map(() => ({ authorization: `Bearer ${token()}` }));
  const claims = () => {
    const c = jwt.decode(known.userToken) as Json;
    return { iss: c.iss, aud: c.aud, sub: c.sub, email: c.email, type: 'access', sid: c.sid, jti: c.jti, iat: now() };
  };
  const crafted = fc.constantFrom<() => string>(
    () => sign({ ...claims(), exp: now() - 60 }),
    () => sign({ ...claims(), exp: now() + 600 }, FOREIGN_SECRET),
    () => sign({ ...claims(), exp: now() + 600 }, TEST_SECRET, 'HS512'),
    () =>
      `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...claims(), exp: now() + 600 })).toString('base64url')}.`,
    () => sign({ ...claims(), type: 'refresh', exp: now() + 600 }),
    () => known.refreshToken,
    () => sign({ ...claims(), sub: '0', exp: now() + 600 }),
    () => sign({ ...claims(), sub: '99999999999', exp: now() + 600 }),
    () => sign({ ...claims(), sub: 'abc', exp: now() + 600 }),
    () => sign({ ...claims(), sub: 1, exp: now() + 600 }),
    () => sign({ ...claims(), sid: 'not-a-uuid', exp: now() + 600 }),
    () => sign({ ...claims(), sid: '00000000-0000-0000-0000-000000000000', exp: now() + 600 }),
    () => sign({ ...claims(), exp: 'tomorrow' }),
    () => sign({ ...claims(), exp: 1e20 }),
    () => sign({ ...claims(), type: undefined, exp: now() + 600 }),
    () => known.deletedUserToken,
    () => `${known.userToken}x`,
    () => known.userToken.split('.').slice(0, 2).join('.'),
    () => `${known.userKey.slice(0, -1)}${known.userKey.endsWith('A') ? 'B' : 'A'}`,
    () => known.userKey.slice(0, -1),
    () => 'a'.repeat(6000),
  );
  const headerSafe = (s: string) => s.replace(/[^\x21-\x7e]/g, 'x') || 'x';
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant({}) },
    { weight: 6, arbitrary: bearer(() => known.adminToken) },
    { weight: 4, arbitrary: bearer(() => known.userToken) },
    { weight: 2, arbitrary: bearer(() => known.userKey) },
    { weight: 1, arbitrary: bearer(() => known.readOnlyKey) },
    { weight: 3, arbitrary: crafted.map((make) => ({ authorization: `Bearer ${make()}` })) },
    { weight: 1, arbitrary: weirdString.filter((s) => s.length < 2000).map((s) => ({ authorization: `Bearer ${headerSafe(s)}` })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('Bearer', 'Bearer ', 'bearer x.y.z', 'Basic YWRtaW46YWRtaW4=', 'Token abc', 'Bearer a b', 'BEARER')
        .map((value) => ({ authorization: value })),
    },
    { weight: 1, arbitrary: fc.constant(0).map(() => ({ authorization: `bEaReR   ${known.adminToken}   ` })) },
  );
}

/** Path values: known ids and sessions, edges of the id range, and junk. */
function pathValue(param: Parameter): fc.Arbitrary<string> {
  const junk = fc.oneof(
    fc.constantFrom(
      '0',
      '-1',
      '-0',
      '+1',
      '1.5',
      '1e3',
      '0x1F',
      '00001',
      ' 1',
      '1 ',
      'abc',
      'null',
      'NaN',
      'Infinity',
      '2147483648',
      '9'.repeat(40),
      '%',
      '%zz',
    ),
    weirdString.filter((s) => s.length > 0 && s.length < 300),
  );
  if (param.schema.type === 'integer') {
    return fc.oneof(
      { weight: 4, arbitrary: fc.nat().map((i) => String(knownIds()[i % knownIds().length])) },
      { weight: 2, arbitrary: fc.constantFrom(1, 2147483647, 999_999).map(String) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 2147483647 }).map(String) },
      { weight: 4, arbitrary: junk.map(segment) },
    );
  }
  return fc.oneof(
    { weight: 3, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.nat().map((i) => known.sessions[i % known.sessions.length]) },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.toUpperCase()) },
    { weight: 3, arbitrary: junk.map(segment) },
  );
}

/** Query strings: declared parameters with odd values, repeated parameters, undeclared names. */
function queryFor(params: Parameter[]): fc.Arbitrary<string> {
  const declared = params.filter((p) => p.in === 'query');
  const undeclared = fc.oneof(
    fc.constantFrom('debug', 'page[]', 'per_page[0]', '__proto__', 'limit%00'),
    weirdString.filter((s) => s.length < 50),
  );
  const name = declared.length
    ? fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...declared.map((p) => p.name)) }, { weight: 1, arbitrary: undeclared })
    : undeclared;
  return fc.array(name, { maxLength: 6 }).chain((names) => {
    if (names.length === 0) return fc.constant('');
    return fc
      .tuple(
        ...names.map((key) => {
          const param = declared.find((p) => p.name === key);
          return (param ? valueFor(param.schema) : anyJson).map((value) => [key, value] as const);
        }),
      )
      .map((values) => {
        const search = new URLSearchParams();
        for (const [name, value] of values) {
          const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
          search.append(name, fitForUrl(wellFormed(text)));
        }
        return `?${search.toString()}`;
      });
  });
}

// ---------------------------------------------------------------------------------------------
// What every answer must be

function describeRequest(method: string, path: string, body: unknown, options: Options): string {
  const shown = options.raw !== undefined ? options.raw : JSON.stringify(body);
  return `${method} ${path.slice(0, 300)} body=${String(shown).slice(0, 300)} headers=${JSON.stringify(options.headers ?? {}).slice(0, 200)}`;
}

/** Statuses seen per operation, to show how deep the fuzzing reached. */
const seen = new Map<string, Map<number, number>>();

async function sendAndCheck(
  method: string,
  path: string,
  body: unknown,
  options: Options,
  label = `${method} ${path.split('?')[0]}`,
): Promise<Response> {
  requests++;
  let res: Response;
  try {
    res = await t.send(method, path, body, options);
  } catch (error) {
    // The harness throws when the answer is not one the contract documents.
    throw new Error(`${describeRequest(method, path, body, options)}\n${(error as Error).message}`, { cause: error });
  }
  if (process.env.FUZZ_DEBUG && label.includes(process.env.FUZZ_DEBUG))
    console.log(res.status, describeRequest(method, path, body, options).slice(0, 300), JSON.stringify(res.body).slice(0, 300));
  const tally = seen.get(label) ?? new Map<number, number>();
  tally.set(res.status, (tally.get(res.status) ?? 0) + 1);
  seen.set(label, tally);
  const where = `${describeRequest(method, path, body, options)} → ${res.status} ${JSON.stringify(res.body).slice(0, 400)}`;
  if (res.status >= 500) throw new Error(`server error: ${where}`);
  if (method === 'HEAD' || res.status === 204) return res;
  if (!String(res.headers['content-type'] ?? '').startsWith('application/json')) throw new Error(`not JSON: ${where}`);
  // The key set is served as RFC 7517 JSON, which verifiers expect bare; its errors are enveloped.
  if (path.split('?')[0] === '/.well-known/jwks.json' && res.status === 200) {
    if (!Array.isArray((res.body as Json)?.keys)) throw new Error(`not a JWK Set: ${where}`);
    return res;
  }
  const envelope = res.body as Json;
  if (typeof envelope !== 'object' || envelope === null || envelope.success !== res.status < 400) {
    throw new Error(`envelope's success disagrees with the status: ${where}`);
  }
  if (!envelope.success && (typeof envelope.error?.code !== 'string' || typeof envelope.error?.message !== 'string')) {
    throw new Error(`error envelope without code and message: ${where}`);
  }
  if (envelope.success && !('data' in envelope)) throw new Error(`success envelope without data: ${where}`);
  if (res.status === 401 && !/^Bearer/.test(res.headers['www-authenticate'] ?? ''))
    throw new Error(`401 without a Bearer challenge: ${where}`);
  if (envelope.error?.code === 'VALIDATION_ERROR') {
    for (const detail of envelope.error.details ?? []) {
      if (!/^(body|query|path)(\.|$)/.test(detail.field)) throw new Error(`validation detail names no body/query/path field: ${where}`);
    }
  }
  return res;
}

const runOptions = (numRuns: number) => ({ numRuns, seed: SEED, endOnFailure: !process.env.FUZZ_SHRINK });

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  t = await startTestApp();
  adminRow = await t.db.selectFrom('users').selectAll().where('email', '=', ADMIN.email).executeTakeFirstOrThrow();
  const people = await Promise.all(Array.from({ length: 4 }, () => t.register({ password: 'Quartz-Lantern-4821' })));
  const gone = await t.register({ password: 'Quartz-Lantern-4821' });
  known.deletedUserToken = gone.access;
  known.adminToken = await t.adminToken();
  expect((await t.delete(`/api/users/${gone.id}`, { token: known.adminToken })).status).toBe(204);
  known.ids = [adminRow.id, ...people.map((p) => p.id), gone.id];
  known.sessions = people.map((p) => (jwt.decode(p.access) as Json).sid);
}, 60_000);

afterAll(async () => {
  const lines = [...seen].map(
    ([label, tally]) =>
      `  ${label}: ${[...tally]
        .sort(([a], [b]) => a - b)
        .map(([status, n]) => `${status}×${n}`)
        .join(' ')}`,
  );
  console.log(`contract fuzz (${t?.kind}): ${requests} requests over ${operations.length} operations\n${lines.join('\n')}`);
  await t?.close();
});

/**
 * Fresh credentials: a fuzzed request may log out, disable, rename or delete its caller. The admin
 * comes back as it was; the user is a new one.
 */
async function renewCredentials(): Promise<void> {
  const { id, ...row } = adminRow;
  await t.db
    .updateTable('users')
    .set({ ...row, deleted_at: null, is_active: true, role: 'admin' })
    .where('id', '=', id)
    .execute();
  known.adminToken = await t.adminToken();
  const user = await t.register({ password: USER_PASSWORD });
  known.userToken = user.access;
  known.userId = user.id;
  known.userEmail = user.email;
  known.refreshToken = user.refresh;
  const key = (read_only: boolean) => t.post('/api/auth/api-keys', { name: 'Fuzz', read_only }, { token: user.access });
  [known.userKey, known.readOnlyKey] = (await Promise.all([key(false), key(true)])).map((res) => res.body.data.key as string);
  known.sessions = [...known.sessions.slice(0, 4), (jwt.decode(user.access) as Json).sid];
}

beforeEach(renewCredentials);

/** After a successful change made with valid credentials, they may be gone: make new ones. */
async function renewAfter(method: string, res: Response, headers: Record<string, string>): Promise<void> {
  const authorization = headers.authorization ?? '';
  const valid = [known.adminToken, known.userToken, known.userKey].some((credential) => authorization.includes(credential));
  if (method !== 'GET' && res.status < 300 && valid) await renewCredentials();
}

describe('every operation of the contract, fuzzed', () => {
  it('reads the operations from the contract', () => {
    expect(operations.length).toBeGreaterThanOrEqual(20);
    expect(operations.map((op) => op.id)).toEqual(
      expect.arrayContaining(['register', 'login', 'listUsers', 'updateUser', 'revokeSession', 'healthReady']),
    );
  });

  it.each(operations.map((op) => [`${op.method} ${op.template}`, op] as const))(
    '%s answers only documented, enveloped, non-5xx responses',
    async (_name, op) => {
      const pathArb = fc.tuple(...op.parameters.filter((p) => p.in === 'path').map((p) => pathValue(p).map((v) => [p.name, v] as const)));
      const body = op.body ? fc.option(bodyFor(op.body.schema), { nil: undefined, freq: 8 }) : fc.constant(undefined);
      const runs = op.body || op.parameters.length > 0 || op.secured ? RUNS : Math.ceil(RUNS / 4);

      await fc.assert(
        fc.asyncProperty(
          pathArb,
          queryFor(op.parameters),
          body,
          op.secured ? authorization() : fc.oneof(fc.constant({}), authorization()),
          async (params, query, payload, headers) => {
            let path = op.template;
            for (const [name, value] of params) path = path.replace(`{${name}}`, value);
            const options: Options = { headers: { ...headers } };
            const label = `${op.method} ${op.template}`;
            let res: Response;
            if (payload === undefined) {
              res = await sendAndCheck(op.method, path + query, undefined, options, label);
            } else if (
              op.body!.mediaType === 'application/x-www-form-urlencoded' &&
              payload &&
              typeof payload === 'object' &&
              !Array.isArray(payload)
            ) {
              res = await sendAndCheck(op.method, path + query, payload, { ...options, form: true }, label);
            } else {
              // JSON of any shape, exactly as given: arrays, strings and numbers included.
              const raw = JSON.stringify(payload) ?? 'null';
              res = await sendAndCheck(
                op.method,
                path + query,
                undefined,
                { ...options, raw, headers: { ...options.headers, 'content-type': 'application/json' } },
                label,
              );
            }
            await renewAfter(op.method, res, headers);
          },
        ),
        runOptions(runs),
      );
    },
    120_000,
  );
});

describe('raw and malformed bodies', () => {
  const bodyOperations = operations.filter((op) => op.body);

  const CONTENT_TYPES = [
    'application/json',
    'application/json; charset=utf-8',
    'application/JSON',
    'application/x-www-form-urlencoded',
    'text/plain',
    'text/html',
    'application/xml',
    'multipart/form-data; boundary=xyz',
    'application/octet-stream',
    'application/json; charset=utf-16',
    'application/json; charset=nonsense',
    'application/vnd.api+json',
    '*/*',
    'json',
  ];

  const rawBody = fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      '{',
      '}',
      '{"email":',
      '{"email": "a@b.co",}',
      "{'email': 'a@b.co'}",
      '{"email": "a@b.co" "password": "x"}',
      'null',
      'true',
      '0',
      '-1e999',
      '"just a string"',
      '[]',
      '[{}]',
      '{}',
      '{"a":1,"a":2}',
      '{"__proto__": {"role": "admin"}, "email": "a@b.co", "password": "Quartz-Lantern-4821"}',
      '{"constructor": {"prototype": {"admin": true}}}',
      '\uFEFF{}',
      '{"email": "a@b.co\\u0000", "password": "Quartz-Lantern-4821", "name": "x"}',
      '{"name": "\\ud800"}',
      'email=a%40b.co&password=x',
      'username=a%40b.co&password=x&username=b',
      'username[]=a&password[x]=y',
      '%%%%',
      '<xml/>',
      '--xyz\r\nContent-Disposition: form-data; name="email"\r\n\r\na@b.co\r\n--xyz--',
      `[${'['.repeat(3000)}${']'.repeat(3000)}]`,
      `{"a":${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}`,
      `"${'x'.repeat(10_000)}"`,
      `{"email":"${'a'.repeat(10_000)}@b.co"}`,
      'a'.repeat(70 * 1024),
    ),
    weirdString,
    anyJson.map((value) => JSON.stringify(value) ?? ''),
    anyJson.map((value) => (JSON.stringify(value) ?? '').slice(0, -1)),
  );

  it('answers every raw body on every body operation with a documented, enveloped 4xx or success', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...bodyOperations),
        rawBody,
        fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined, freq: 8 }),
        fc.boolean(),
        async (op, raw, contentType, signedIn) => {
          const path = op.template.replace('{id}', String(known.ids[1]));
          const headers: Record<string, string> = {};
          if (contentType) headers['content-type'] = contentType;
          if (signedIn) headers.authorization = `Bearer ${known.adminToken}`;
          const res = await sendAndCheck(op.method, path, undefined, { raw: wellFormed(raw), headers }, 'raw bodies');
          await renewAfter(op.method, res, headers);
        },
      ),
      runOptions(RUNS * 4),
    );
  }, 120_000);
});

describe('methods and paths outside the contract', () => {
  it('answers 405 or 404 in the envelope, never a 5xx', async () => {
    // The OpenID Connect provider's paths answer OAuth 2.0 errors, not the envelope: its own tests cover them.
    const paths = Object.entries<Json>(document.paths)
      .filter(([, item]) => !Object.values<Json>(item).some((op) => op?.['x-served-by'] !== undefined))
      .map(([template]) => template.replace('{id}', String(known.ids[1])));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constantFrom(...paths),
          fc.constantFrom(...paths).map((p) => `${p}/${segment('extra')}`),
          fc.constantFrom('/api', '/api/', '/api/users//', '/api/unknown', '/health/ready/x', '/%2e%2e/%2e%2e/etc/passwd'),
        ),
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
        async (path, method) => {
          const headers = { authorization: `Bearer ${known.adminToken}` };
          await renewAfter(method, await sendAndCheck(method, path, undefined, { headers }, 'outside the contract'), headers);
        },
      ),
      runOptions(RUNS),
    );
  }, 60_000);
});
