/**
 * The ceiling the service is measured against: raw Koa + pg + jsonwebtoken + @node-rs/bcrypt doing
 * only the work each route cannot avoid, with no validation, logging, metrics or security headers.
 *
 *   GET  /api/auth/me          verify the JWT, load the user
 *   GET  /api/users            verify the JWT, load the caller, select a page of 20 and its count
 *   POST /api/auth/login/json  look the user up by e-mail, verify the password, sign a token
 *   POST /oauth2/token         check the client's secret, then
 *                                authorization_code: consume the stored one-time code (one statement
 *                                that also reads the user), check PKCE and the redirect URI;
 *                                refresh_token: rotate the stored token (one statement that deletes
 *                                the old, inserts the new and reads the user);
 *                              and sign an access token (HS256) and an ID token (ES256)
 *   GET  /oauth2/userinfo      verify the JWT, load the user, answer its claims
 *
 * The OAuth tables (bench_oauth_clients, bench_codes, bench_refresh_tokens) are the benchmark's own,
 * made and filled by bench/run.ts; the client's secret is kept as its SHA-256.
 *
 * Environment: DATABASE_URL, SECRET_KEY, PORT, WORKERS (processes sharing the port, 1 by default),
 * PREPARED=1 to send the queries as named statements, which PostgreSQL parses and plans once per
 * connection (as the service does with its token check) instead of on every call, and OIDC_PRIVATE_KEY
 * (an EC P-256 key, PEM) for ID tokens.
 */
import cluster from 'node:cluster';
import { createHash, createPrivateKey, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import { verify as verifyPassword } from '@node-rs/bcrypt';
import jwt from 'jsonwebtoken';
import Koa from 'koa';
import { Pool } from 'pg';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const key = createSecretKey(Buffer.from(process.env.SECRET_KEY ?? '', 'utf8'));
const prepared = process.env.PREPARED === '1';
const query = (name: string, text: string, values: unknown[] = []) =>
  prepared ? pool.query({ name, text, values }) : pool.query(text, values);
const USER_COLUMNS = 'id, email, name, role, is_active, email_verified, created_at, updated_at';
const idTokenKey = process.env.OIDC_PRIVATE_KEY ? createPrivateKey(process.env.OIDC_PRIVATE_KEY) : undefined;
const ISSUER = 'http://bench.invalid';
const sha256 = (text: string) => createHash('sha256').update(text).digest();

async function bearerUser(header: string | undefined) {
  const token = header?.startsWith('Bearer ') ? header.slice(7) : undefined;
  if (!token) return undefined;
  let claims: jwt.JwtPayload;
  try {
    claims = jwt.verify(token, key, { algorithms: ['HS256'] }) as jwt.JwtPayload;
  } catch {
    return undefined;
  }
  const { rows } = await query('user', `select ${USER_COLUMNS} from users where id = $1 and deleted_at is null`, [Number(claims.sub)]);
  return rows[0];
}

async function readBody(ctx: Koa.Context): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The client of an HTTP Basic authorization header, when its secret matches. */
async function basicClient(header: string | undefined): Promise<string | undefined> {
  if (!header?.startsWith('Basic ')) return undefined;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const at = decoded.indexOf(':');
  const [id, secret] = [decodeURIComponent(decoded.slice(0, at)), decodeURIComponent(decoded.slice(at + 1))];
  const { rows } = await query('client', 'select secret_sha256 from bench_oauth_clients where client_id = $1', [id]);
  return rows[0] && timingSafeEqual(rows[0].secret_sha256, sha256(secret)) ? id : undefined;
}

interface TokenUser {
  id: number;
  scope: string;
  nonce?: string | null;
}

/** The access token (HS256, as /api/auth/me reads) and the ID token (ES256) of a grant. */
function tokenResponse(clientId: string, user: TokenUser, refreshToken?: string) {
  const now = Math.floor(Date.now() / 1000);
  const sub = String(user.id);
  const accessToken = jwt.sign({ sub, client_id: clientId, scope: user.scope, type: 'access' }, key, {
    algorithm: 'HS256',
    expiresIn: 1800,
  });
  const claims = {
    iss: ISSUER,
    sub,
    aud: clientId,
    iat: now,
    exp: now + 3600,
    auth_time: now,
    ...(user.nonce ? { nonce: user.nonce } : {}),
  };
  const idToken = jwt.sign(claims, idTokenKey!, { algorithm: 'ES256' });
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: 1800,
    scope: user.scope,
    id_token: idToken,
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
  };
}

const CODE_EXCHANGE = `with code as (
  delete from bench_codes where code = $1 and client_id = $2 and expires_at > now()
  returning user_id, code_challenge, redirect_uri, scope, nonce)
select code.*, users.id from code join users on users.id = code.user_id and users.deleted_at is null and users.is_active`;

const REFRESH_ROTATION = `with old as (
  delete from bench_refresh_tokens where token_sha256 = $1 and client_id = $2 and expires_at > now()
  returning user_id, scope),
fresh as (
  insert into bench_refresh_tokens (token_sha256, client_id, user_id, scope, expires_at)
  select $3, $2, user_id, scope, now() + interval '14 days' from old
  returning user_id, scope)
select fresh.scope, users.id from fresh join users on users.id = fresh.user_id and users.deleted_at is null and users.is_active`;

async function token(ctx: Koa.Context): Promise<void> {
  const form = new URLSearchParams(await readBody(ctx));
  const clientId = await basicClient(ctx.get('authorization'));
  if (!clientId) return void ((ctx.status = 401), (ctx.body = { error: 'invalid_client' }));
  const invalidGrant = () => void ((ctx.status = 400), (ctx.body = { error: 'invalid_grant' }));
  if (form.get('grant_type') === 'authorization_code') {
    const { rows } = await query('code', CODE_EXCHANGE, [form.get('code'), clientId]);
    const row = rows[0];
    const verifier = form.get('code_verifier') ?? '';
    if (!row || row.redirect_uri !== form.get('redirect_uri') || sha256(verifier).toString('base64url') !== row.code_challenge)
      return invalidGrant();
    ctx.body = tokenResponse(clientId, row);
  } else if (form.get('grant_type') === 'refresh_token') {
    const fresh = randomBytes(32).toString('base64url');
    const { rows } = await query('refresh', REFRESH_ROTATION, [sha256(form.get('refresh_token') ?? ''), clientId, sha256(fresh)]);
    if (!rows[0]) return invalidGrant();
    ctx.body = tokenResponse(clientId, rows[0], fresh);
  } else {
    ctx.status = 400;
    ctx.body = { error: 'unsupported_grant_type' };
  }
  ctx.set('cache-control', 'no-store');
}

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.method === 'GET' && ctx.path === '/api/auth/me') {
    const user = await bearerUser(ctx.get('authorization'));
    if (!user) return void (ctx.status = 401);
    ctx.body = { success: true, data: user };
  } else if (ctx.method === 'GET' && ctx.path === '/api/users') {
    const user = await bearerUser(ctx.get('authorization'));
    if (!user) return void (ctx.status = 401);
    const [page, count] = await Promise.all([
      query('page', `select ${USER_COLUMNS} from users where deleted_at is null order by created_at desc, id desc limit 20`),
      query('total', 'select count(*)::int as total from users where deleted_at is null'),
    ]);
    ctx.body = { success: true, data: page.rows, meta: { page: 1, per_page: 20, total: count.rows[0].total } };
  } else if (ctx.method === 'POST' && ctx.path === '/api/auth/login/json') {
    const { email, password } = JSON.parse(await readBody(ctx));
    const { rows } = await query('login', 'select id, email, password_hash from users where email = $1', [email]);
    if (!rows[0] || !(await verifyPassword(password, rows[0].password_hash))) return void (ctx.status = 401);
    const token = jwt.sign({ sub: String(rows[0].id), type: 'access' }, key, { algorithm: 'HS256', expiresIn: 1800 });
    ctx.body = { success: true, data: { access_token: token, token_type: 'bearer' } };
  } else if (ctx.method === 'POST' && ctx.path === '/oauth2/token') {
    await token(ctx);
  } else if (ctx.method === 'GET' && ctx.path === '/oauth2/userinfo') {
    const user = await bearerUser(ctx.get('authorization'));
    if (!user) return void (ctx.status = 401);
    ctx.body = {
      sub: String(user.id),
      name: user.name,
      email: user.email,
      email_verified: user.email_verified,
      updated_at: Math.floor(user.updated_at.getTime() / 1000),
    };
  } else if (ctx.path === '/health/live') {
    ctx.body = { success: true, data: { status: 'alive' } };
  } else {
    ctx.status = 404;
  }
});
const workers = Number(process.env.WORKERS ?? 1);
if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill();
    process.exit(0);
  });
} else {
  app.listen(Number(process.env.PORT ?? 8001), '127.0.0.1');
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
}
