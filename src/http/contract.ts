import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PaginationConfig, ServerConfig } from '../config/index.js';

const require = createRequire(import.meta.url);

/** A query parameter as the contract declares it, for the bounds this module adjusts. */
interface ContractParameter {
  in: string;
  name: string;
  schema: { maximum?: number };
}

/** A schema of the contract, for the extension this module reads. */
interface ContractSchema {
  'x-one-of'?: unknown[];
  [key: string]: unknown;
}

export type OpenApiDocument = {
  openapi: string;
  info: { version: string; title?: string; [key: string]: unknown };
  paths: Record<string, Record<string, { parameters?: ContractParameter[]; [key: string]: unknown } | undefined>>;
  components?: { securitySchemes?: Record<string, unknown>; schemas?: Record<string, ContractSchema>; [key: string]: unknown };
  [key: string]: unknown;
};

let parsed: OpenApiDocument | undefined;

function readContract(): OpenApiDocument {
  parsed ??= loadContract();
  return parsed;
}

/**
 * The build writes the contract as JSON beside the compiled code (dist/api/openapi.json): parsing it
 * takes a millisecond or two where the YAML takes some 50. Running from the sources, it is the YAML.
 */
function loadContract(): OpenApiDocument {
  const built = join(import.meta.dirname, '..', '..', 'api', 'openapi.json');
  if (import.meta.dirname.endsWith(join('dist', 'src', 'http')) && existsSync(built))
    return JSON.parse(readFileSync(built, 'utf8')) as OpenApiDocument;
  // Loaded only when the contract is read from YAML
  const yaml = require('js-yaml') as typeof import('js-yaml');
  return yaml.load(readFileSync(contractSource(), 'utf8')) as OpenApiDocument;
}

/** api/openapi.yaml, found from the source tree (src/http) and from the built one (dist/src/http). */
function contractSource(): string {
  const candidates = [
    join(import.meta.dirname, '..', '..', 'api', 'openapi.yaml'),
    join(import.meta.dirname, '..', '..', '..', 'api', 'openapi.yaml'),
  ];
  return candidates.find((file) => existsSync(file)) ?? candidates[0];
}

/** The parts of the service a setting turns off, by the name operations carry in `x-feature`: on or off. */
export type Features = Readonly<Record<string, boolean>>;

/** The extension naming the part of the service an operation belongs to, when a setting can turn that part off. */
export const FEATURE = 'x-feature';

/**
 * The contract as this deployment serves it at /openapi.json: api/openapi.yaml as it is, with
 * `info.version` from APP_VERSION, and without the operations of a part of the service a setting
 * turned off (their `x-feature` is off in `features`), which then answer 404 as any unknown route.
 * Nothing else changes, so that a client generated from the file and one generated from a
 * deployment are the same client.
 */
export function contractFor(config: Pick<ServerConfig, 'appVersion'>, features: Features = {}): OpenApiDocument {
  const doc = structuredClone(readContract());
  doc.info.version = config.appVersion;
  const off = (operation: unknown) => {
    const feature = (operation as Record<string, unknown> | undefined)?.[FEATURE];
    return typeof feature === 'string' && features[feature] === false;
  };
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) if (off(operation)) delete item[method];
    if (!Object.values(item).some((operation) => (operation as { operationId?: string } | undefined)?.operationId)) delete doc.paths[path];
  }
  return doc;
}

/**
 * The document requests are validated against: the served one, with each schema's `x-one-of` as its
 * `oneOf`, and with `MAX_PAGE_SIZE` as the maximum of `per_page` and `limit` (the contract states the
 * default maximum, 100, and says it is configurable). Defaults stay out of it: the service fills them
 * in, and a declared default would make clients that send defaults mix the page and cursor shapes.
 */
export function validationContractFor(
  server: Pick<ServerConfig, 'appVersion'>,
  pagination: PaginationConfig,
  features: Features = {},
): OpenApiDocument {
  const doc = contractFor(server, features);
  // A flat schema with `x-one-of` (the token URL's form) is checked as that `oneOf`: clients see
  // one object with every field, and the service still holds each alternative to its own fields.
  const schemas = doc.components?.schemas ?? {};
  for (const [name, schema] of Object.entries(schemas)) {
    const alternatives = schema['x-one-of'];
    if (alternatives !== undefined) schemas[name] = { description: schema.description, oneOf: alternatives };
  }
  for (const item of Object.values(doc.paths)) {
    for (const operation of Object.values(item)) {
      for (const parameter of operation?.parameters ?? []) {
        if (parameter.in === 'query' && (parameter.name === 'per_page' || parameter.name === 'limit'))
          parameter.schema.maximum = pagination.maxPageSize;
      }
    }
  }
  return doc;
}
