/**
 * The ceiling the service is measured against: raw Koa + pg + jsonwebtoken + @node-rs/bcrypt doing
 * only the work each route cannot avoid, with no validation, logging, metrics or security headers.
 *
 *   GET  /api/auth/me          verify the JWT, load the user
 *   GET  /api/users            verify the JWT, load the caller, select a page of 20 and its count
 *   POST /api/auth/login/json  look the user up by e-mail, verify the password, sign a token
 *
 * Environment: DATABASE_URL, SECRET_KEY, PORT, WORKERS (processes sharing the port, 1 by default), and
 * PREPARED=1 to send the queries as named statements, which PostgreSQL parses and plans once per
 * connection (as the service does with its token check) instead of on every call.
 */
import cluster from 'node:cluster';
import { createSecretKey } from 'node:crypto';
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
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const { email, password } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const { rows } = await query('login', 'select id, email, password_hash from users where email = $1', [email]);
    if (!rows[0] || !(await verifyPassword(password, rows[0].password_hash))) return void (ctx.status = 401);
    const token = jwt.sign({ sub: String(rows[0].id), type: 'access' }, key, { algorithm: 'HS256', expiresIn: 1800 });
    ctx.body = { success: true, data: { access_token: token, token_type: 'bearer' } };
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
