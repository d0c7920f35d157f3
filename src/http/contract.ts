import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import type { Config } from '../config';

export type OpenApiDocument = {
  openapi: string;
  info: { version: string; [key: string]: unknown };
  paths: Record<string, Record<string, any>>;
  [key: string]: unknown;
};

let parsed: OpenApiDocument | undefined;

function readContract(): OpenApiDocument {
  parsed ??= yaml.load(readFileSync(contractFile(), 'utf8')) as OpenApiDocument;
  return parsed;
}

/** api/openapi.yaml, found from the source tree (src/http) and from the built one (dist/src/http). */
function contractFile(): string {
  const candidates = [join(__dirname, '..', '..', 'api', 'openapi.yaml'), join(__dirname, '..', '..', '..', 'api', 'openapi.yaml')];
  return candidates.find((file) => existsSync(file)) ?? candidates[0];
}

/**
 * The contract as this deployment serves it: `info.version` from APP_VERSION, and the page-size
 * limits and defaults from the configuration, so validation and documentation agree with it.
 */
export function contractFor(config: Config): OpenApiDocument {
  const doc = structuredClone(readContract());
  doc.info.version = config.appVersion;
  for (const item of Object.values(doc.paths)) {
    for (const operation of Object.values(item)) {
      for (const parameter of operation?.parameters ?? []) {
        if (parameter.in !== 'query') continue;
        if (parameter.name === 'per_page' || parameter.name === 'limit') {
          parameter.schema.maximum = config.maxPageSize;
          parameter.schema.default = config.defaultPageSize;
        }
      }
    }
  }
  return doc;
}
