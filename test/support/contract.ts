import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import yaml from 'js-yaml';

// ajv-formats is CommonJS: its plugin is the module itself (typed as the default export).
const addFormats = ajvFormats as unknown as typeof ajvFormats.default;

type Json = Record<string, any>;

/** api/openapi.yaml, as data. */
export const document = readContract(join(import.meta.dirname, '..', '..', 'api', 'openapi.yaml'));

/**
 * Every test file reads the contract, and parsing its YAML took some 80 ms of each: the data is
 * kept as JSON in the temporary folder, under a hash of the YAML's text, and read from there.
 */
function readContract(file: string): Json {
  const text = readFileSync(file, 'utf8');
  const cached = join(tmpdir(), `account-test-contract-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.json`);
  try {
    return JSON.parse(readFileSync(cached, 'utf8')) as Json;
  } catch {
    // not kept yet
  }
  const parsed = yaml.load(text) as Json;
  try {
    // Written aside and renamed, so that another test process never reads half a file.
    const staging = `${cached}.${process.pid}`;
    writeFileSync(staging, JSON.stringify(parsed));
    renameSync(staging, cached);
  } catch {
    // a read-only or full temporary folder: parse every time
  }
  return parsed;
}
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ components: document.components }, 'contract');

const validators = new Map<string, ValidateFunction>();

/** Rewrites local refs so ajv resolves them inside the registered contract. */
function rebase(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebase);
  if (schema && typeof schema === 'object') {
    const out: Json = {};
    for (const [key, value] of Object.entries(schema)) {
      out[key] = key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `contract${value}` : rebase(value);
    }
    return out;
  }
  return schema;
}

/** What a `$ref` (or a chain of them) names in the contract; anything else as it is. */
export function resolve<T = Json>(node: Json | undefined): T {
  let current = node;
  while (current && typeof current.$ref === 'string') {
    current = current.$ref
      .slice(2)
      .split('/')
      .reduce((acc: Json, key: string) => acc[key], document);
  }
  return current as T;
}

const operations: { method: string; pattern: RegExp; operation: Json; template: string }[] = [];
for (const [template, item] of Object.entries<Json>(document.paths)) {
  for (const [method, operation] of Object.entries<Json>(item)) {
    if (method === 'parameters') continue;
    const body = template.replace(/\/+$/, '').replace(/\{[^}]+\}/g, '[^/]+');
    operations.push({ method, operation, template, pattern: new RegExp(`^${body}/?$`) });
  }
}

function validatorFor(key: string, schema: Json): ValidateFunction {
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(rebase(schema) as Json);
    validators.set(key, validate);
  }
  return validate;
}

const errorResponse = { $ref: '#/components/schemas/ErrorResponse' };

/**
 * Asserts that a response is one the contract allows for that request: a documented status,
 * JSON with the documented schema, and the envelope for unknown routes and methods.
 */
export function assertMatchesContract(method: string, url: string, status: number, headers: Json, body: unknown): void {
  const path = url.split('?')[0];
  const verb = method.toLowerCase();
  const onPath = operations.filter((op) => op.pattern.test(path));
  const match = onPath.find((op) => op.method === verb || (verb === 'head' && op.method === 'get'));
  const where = `${method} ${url} → ${status}`;
  // Tokens and personal data: no API answer may be kept by a browser or proxy cache.
  if (/^\/api(\/|$)/.test(path) && headers['cache-control'] !== 'no-store') {
    throw new Error(`${where}: Cache-Control is ${JSON.stringify(headers['cache-control'])}, expected no-store on every /api response`);
  }

  if (!match) {
    if (onPath.length === 0 && status !== 404) throw new Error(`${where}: no such route in the contract, expected 404`);
    if (onPath.length > 0 && ![405, 204].includes(status)) throw new Error(`${where}: method not in the contract, expected 405`);
    if (status === 204) return;
    check(`${where}`, validatorFor('ErrorResponse', errorResponse), body);
    return;
  }
  const responses = match.operation.responses as Json;
  const documented = responses[String(status)];
  if (!documented) throw new Error(`${where}: status ${status} is not documented for ${match.operation.operationId}`);
  const response = resolve(documented);
  // A 2xx or 4xx that carries the rate-limit headers declares them.
  if (status < 300 || (status >= 400 && status < 500)) {
    const declared = new Set(Object.keys(response.headers ?? {}).map((name) => name.toLowerCase()));
    for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
      if (headers[name] !== undefined && !declared.has(name))
        throw new Error(`${where}: sends ${name}, which the contract does not declare here`);
    }
  }
  const schema = response.content?.['application/json']?.schema;
  if (!schema) {
    if (verb !== 'head' && body !== undefined && body !== '' && !(typeof body === 'object' && body && Object.keys(body).length === 0)) {
      throw new Error(`${where}: the contract documents no body, got ${JSON.stringify(body)}`);
    }
    return;
  }
  if (verb === 'head') return;
  const type = String(headers['content-type'] ?? '');
  if (!type.startsWith('application/json')) throw new Error(`${where}: content type ${type}, expected application/json`);
  check(where, validatorFor(`${match.operation.operationId}:${status}`, schema), body);
}

/** Asserts that a webhook message's body is what the contract's `x-webhooks` documents for its type. */
export function assertWebhookMatchesContract(type: string, body: unknown): void {
  const event = (document['x-webhooks'] as Json | undefined)?.[type]?.post as Json | undefined;
  if (!event) throw new Error(`webhook ${type}: no such event in the contract's x-webhooks`);
  const schema = resolve(event.requestBody).content['application/json'].schema as Json;
  check(`webhook ${type}`, validatorFor(`webhook:${type}`, schema), body);
}

function check(where: string, validate: ValidateFunction, body: unknown): void {
  if (!validate(body)) {
    throw new Error(`${where}: body does not match the contract: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body, null, 2)}`);
  }
}
