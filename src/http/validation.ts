import ajvFormats from 'ajv-formats';
import type { ErrorObject } from 'ajv';
import { OpenAPIBackend, type Document, type ParsedRequest } from 'openapi-backend';
import { isEmailAddress } from '../email-address.js';
import type { OpenApiDocument } from './contract.js';
import { validationError, type FieldError } from './errors.js';

// ajv-formats is CommonJS: its plugin is the module itself (typed as the default export).
const addFormats = ajvFormats as unknown as typeof ajvFormats.default;

/** openapi-backend set up to validate requests (security, path, query, body) against the contract. */
export function validatingBackend(document: OpenApiDocument): OpenAPIBackend {
  return new OpenAPIBackend({
    definition: document as unknown as Document,
    strict: true,
    coerceTypes: true,
    // Validators are compiled when first needed rather than all at start-up. Responses are the service's
    // own and never validated at run time (the test suite checks each one against the contract), and
    // compiling their validators anyway held some 40 MB per process. Quick mode also skips checking the
    // document against the OpenAPI schema, which `make lint-contract` does, and dereferences it in one
    // synchronous pass (it has only local references).
    quick: true,
    // openapi-backend makes an Ajv instance per operation and validation context, and each would compile
    // the JSON Schema meta-schema to check the contract's schemas before compiling them: most of the
    // start-up time. The lint checks those schemas once, before they ship.
    // verbose: an error carries its schema, so a pattern can say in words what it wants (`x-pattern-message`).
    ajvOpts: { allErrors: true, strict: false, validateSchema: false, verbose: true },
    customizeAjv: (ajv) => {
      addFormats(ajv, ['date-time', 'uuid']);
      // The service's one e-mail rule; it allows surrounding white space, which is trimmed before storing.
      ajv.addFormat('email', { type: 'string', validate: isEmailAddress });
      ajv.addKeyword({ keyword: 'x-trimmed', type: 'string', schemaType: 'string', validate: trimmedRule });
      return ajv;
    },
  });
}

/**
 * `x-trimmed`: what a pattern cannot say in every client's language. U+2028 and U+2029 end the regex
 * literal a JavaScript client generates from a pattern, so the contract's patterns leave them out and
 * this keyword holds them to the rule of the other line breaks: trimmed around a value (`trim()`
 * removes them), refused inside it (`single-line`), and never all a value holds (`nonblank`).
 */
function trimmedRule(rule: string, value: string): boolean {
  const trimmed = value.trim();
  if (rule === 'nonblank') return trimmed !== '';
  if (rule === 'single-line') return trimmed !== '' && !/[\u2028\u2029]/.test(trimmed);
  throw new Error(`unknown x-trimmed rule: ${rule}`);
}

/** The 422 for a request the contract refuses: each field to fix, as the envelope's `details`. */
export function validationFailure(errors: ErrorObject[]) {
  // A value may break two rules that share a message (a pattern and its `x-trimmed`): name it once.
  const fields = new Map(
    closestBranch(errors)
      .map((error) => fieldError(error))
      .map((field) => [JSON.stringify(field), field]),
  );
  return validationError([...fields.values()]);
}

/**
 * PostgreSQL text cannot hold U+0000, so a valid-looking string with one would fail in the database
 * (a 500). It is refused like any other invalid value: a 422 naming each field.
 */
export function rejectNulCharacters(request: Pick<ParsedRequest, 'requestBody' | 'query' | 'params'>): void {
  const fields: FieldError[] = [];
  const visit = (value: unknown, field: string): void => {
    if (typeof value === 'string') {
      if (value.includes('\u0000')) fields.push({ field, message: 'must not contain NUL characters' });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) visit(item, `${field}.${key}`);
    }
  };
  visit(request.requestBody, 'body');
  visit(request.query, 'query');
  visit(request.params, 'path');
  if (fields.length > 0) throw validationError(fields);
}

/**
 * A body that matches none of a `oneOf`'s schemas (the token URL's two grants) fails each of them:
 * keep only the errors of the one it came closest to, so that the details name what to fix rather
 * than every field of every other shape.
 */
function closestBranch(errors: ErrorObject[]): ErrorObject[] {
  const branchOf = (error: ErrorObject) => /\/oneOf\/(\d+)\//.exec(error.schemaPath)?.[1];
  const counts = new Map<string, number>();
  for (const error of errors) {
    const branch = branchOf(error);
    if (branch !== undefined) counts.set(branch, (counts.get(branch) ?? 0) + 1);
  }
  if (counts.size === 0) return errors;
  const [closest] = [...counts].sort(([a, x], [b, y]) => x - y || Number(a) - Number(b))[0];
  return errors.filter((error) => error.keyword !== 'oneOf' && (branchOf(error) ?? closest) === closest);
}

/** An ajv error as the envelope's `details` entry: `body.email`, `query.page`, `path.id`. */
function fieldError(error: ErrorObject): FieldError {
  const segments = error.instancePath.split('/').slice(1);
  if (segments[0] === 'requestBody') segments[0] = 'body';
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') {
    const missing = String(params.missingProperty);
    return { field: missing === 'requestBody' ? 'body' : [...segments, missing].join('.'), message: 'is required' };
  }
  if (error.keyword === 'additionalProperties') {
    return { field: [...segments, String(params.additionalProperty)].join('.'), message: 'is not allowed' };
  }
  const patternMessage =
    error.keyword === 'pattern' || error.keyword === 'x-trimmed'
      ? (error.parentSchema as { 'x-pattern-message'?: unknown } | undefined)?.['x-pattern-message']
      : undefined;
  return {
    field: segments.join('.') || 'body',
    message: typeof patternMessage === 'string' ? patternMessage : (error.message ?? 'is invalid'),
  };
}
