import type { Kysely } from 'kysely';
import type { AuditDetails } from '../audit/audit-repository.js';
import { recordEvent, type AuditEventType } from '../audit/audit-events.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database, Executor } from '../db/types.js';
import { Conflict, NotFound, Validation, type FieldProblem } from '../errors.js';
import { requireAdmin, type Principal } from '../principal.js';
import {
  deleteOauthResource,
  findOauthResource,
  findOauthResourceByIndicator,
  indicatorTaken,
  insertOauthResource,
  listOauthResources,
  updateOauthResource,
  type OauthResourceRow,
} from './resource-repository.js';

export interface ResourceInput {
  indicator: string;
  name: string;
  scopes: string[];
}

export type ResourceChanges = Partial<ResourceInput>;

/** A resource server as the API shows it. */
export interface ResourceView {
  id: number;
  indicator: string;
  name: string;
  scopes: string[];
  created_at: Date;
  updated_at: Date;
}

/** The scopes of OpenID Connect itself, which are the provider's and never an API's. */
const OPENID_SCOPES = new Set(['openid', 'offline_access', 'profile', 'email', 'organizations']);
/** A scope token (RFC 6749 §3.3): printable ASCII but space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** What is wrong with a resource indicator (RFC 8707 §2): an absolute URI without a fragment. */
export function indicatorProblem(indicator: string): string | undefined {
  if (!URL.canParse(indicator)) return 'must be an absolute URI';
  if (indicator.includes('#')) return 'may not carry a fragment';
  if (/\s/.test(indicator)) return 'may not contain white space';
  return undefined;
}

function check(settings: ResourceInput): void {
  const problems: FieldProblem[] = [];
  const problem = indicatorProblem(settings.indicator);
  if (problem) problems.push({ field: 'body.indicator', message: problem });
  if (settings.name === '') problems.push({ field: 'body.name', message: 'may not be blank' });
  settings.scopes.forEach((scope, index) => {
    if (!SCOPE_TOKEN.test(scope))
      problems.push({ field: `body.scopes.${index}`, message: 'must be a scope token (no spaces, quotes or backslashes)' });
    else if (OPENID_SCOPES.has(scope))
      problems.push({ field: `body.scopes.${index}`, message: `${scope} is an OpenID Connect scope, not an API's` });
  });
  if (new Set(settings.scopes).size !== settings.scopes.length)
    problems.push({ field: 'body.scopes', message: 'may name each scope once' });
  if (problems.length > 0) throw new Validation(problems);
}

export function resourceView(row: OauthResourceRow): ResourceView {
  return {
    id: row.id,
    indicator: row.indicator,
    name: row.name,
    scopes: row.scopes,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const taken = () => new Conflict('Another API has this resource indicator');

/**
 * The APIs (resource servers, RFC 8707) the OpenID Connect provider issues JWT access tokens for
 * (RFC 9068), as admins manage them: an application that names one with `resource` gets a token
 * whose `aud` is its indicator and whose `scope` holds some of its scopes.
 */
export class OauthResources {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
  ) {}

  async list(principal: Principal | null): Promise<ResourceView[]> {
    if (principal) requireAdmin(principal);
    return (await listOauthResources(this.db)).map(resourceView);
  }

  async get(principal: Principal | null, id: number): Promise<ResourceView> {
    if (principal) requireAdmin(principal);
    return resourceView(found(await findOauthResource(this.db, id)));
  }

  async create(principal: Principal | null, input: ResourceInput): Promise<ResourceView> {
    if (principal) requireAdmin(principal);
    const settings = { indicator: input.indicator, name: input.name.trim(), scopes: input.scopes };
    check(settings);
    return this.transact(async (trx) => {
      const row = await insertOauthResource(trx, settings);
      if (!row) throw taken();
      await recordAdminEvent(trx, principal, 'oauth_resource.created', {
        resource_id: row.id,
        indicator: row.indicator,
        scopes: row.scopes,
      });
      return resourceView(row);
    });
  }

  async update(principal: Principal | null, id: number, patch: ResourceChanges): Promise<ResourceView> {
    if (principal) requireAdmin(principal);
    return this.transact(async (trx) => {
      const current = found(await findOauthResource(trx, id));
      const settings = {
        indicator: patch.indicator ?? current.indicator,
        name: patch.name?.trim() ?? current.name,
        scopes: patch.scopes ?? current.scopes,
      };
      check(settings);
      if (settings.indicator !== current.indicator && (await indicatorTaken(trx, settings.indicator, id))) throw taken();
      const row = found(await updateOauthResource(trx, id, settings));
      await recordAdminEvent(trx, principal, 'oauth_resource.updated', {
        resource_id: id,
        indicator: row.indicator,
        fields: Object.keys(patch),
      });
      return resourceView(row);
    });
  }

  async remove(principal: Principal | null, id: number): Promise<void> {
    if (principal) requireAdmin(principal);
    await this.transact(async (trx) => {
      const row = found(await deleteOauthResource(trx, id));
      await recordAdminEvent(trx, principal, 'oauth_resource.deleted', { resource_id: id, indicator: row.indicator });
    });
  }
}

/** The resource server an indicator names, as the provider reads it; undefined for one no admin made. */
export async function resourceServerOf(db: Executor, indicator: string): Promise<{ indicator: string; scopes: string[] } | undefined> {
  const row = await findOauthResourceByIndicator(db, indicator);
  return row && { indicator: row.indicator, scopes: row.scopes };
}

/** An admin's change to the APIs (or the command line's): about no account, so without a subject. */
function recordAdminEvent(trx: UnitOfWork, principal: Principal | null, type: AuditEventType, details: AuditDetails): Promise<void> {
  return recordEvent(trx, { type, actor: principal?.user.id ?? null, subject: null, details, origin: principal?.client ?? null });
}

function found(row: OauthResourceRow | undefined): OauthResourceRow {
  if (row === undefined) throw new NotFound('API not found');
  return row;
}
