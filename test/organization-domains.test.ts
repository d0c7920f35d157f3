import { randomBytes } from 'node:crypto';
import { startTestApp, type TestContext } from './support/app.js';
import type { OrganizationDomainTable } from '../src/organizations/domain-repository.js';
import { auditTable } from './support/audit.js';
import { startDnsServer, type DnsServer } from './support/dns-server.js';
import { expectError } from './support/expect.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';
import { verifiedUser } from './support/organizations.js';

let t: TestContext;
let dns: DnsServer;
let admin: string;
let smtp: TestSmtpServer;

beforeAll(async () => {
  dns = await startDnsServer();
  smtp = await startSmtpServer();
  t = await startTestApp({
    DNS_SERVERS: dns.address,
    PROVIDER_ALLOW_PRIVATE_URLS: 'true',
    SMTP_URL: smtp.url,
    MAIL_POLL_INTERVAL_MS: '100',
  });
  admin = await t.adminToken();
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
  await smtp?.close();
});

const domains = () => t.db.withTables<{ organization_domains: OrganizationDomainTable }>();

const uniqueDomain = () => `acme-${randomBytes(4).toString('hex')}.test`;

async function createOrg(token: string): Promise<number> {
  const res = await t.post('/api/organizations', { name: `Acme ${randomBytes(3).toString('hex')}` }, { token });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

/** An organisation of a new owner with `domain` added, verified when asked. */
async function orgWithDomain(domain: string, verified: boolean) {
  const owner = await verifiedUser(t);
  const id = await createOrg(owner.access);
  const added = await t.post(`/api/organizations/${id}/domains`, { domain }, { token: owner.access });
  expect(added.status).toBe(201);
  if (verified) {
    dns.records.set(`_account-verification.${domain}`, [added.body.data.verification.value]);
    const res = await t.post(`/api/organizations/${id}/domains/${domain}/verify`, undefined, { token: owner.access });
    expect(res.status).toBe(200);
    dns.records.delete(`_account-verification.${domain}`);
  }
  return { owner, id, token: added.body.data.verification.value as string };
}

async function identityProvider(): Promise<string> {
  const slug = `idp-${randomBytes(3).toString('hex')}`;
  const res = await t.post(
    '/api/identity-providers',
    {
      slug,
      kind: 'oidc',
      name: 'Acme Okta',
      client_id: 'client',
      client_secret: 'secret',
      issuer: 'http://127.0.0.1:1/issuer',
    },
    { token: admin },
  );
  expect(res.status).toBe(201);
  return slug;
}

describe('domains', () => {
  it('adds a domain with the TXT record to publish, and verifies it once the record holds the token', async () => {
    const owner = await verifiedUser(t);
    const id = await createOrg(owner.access);
    const domain = uniqueDomain();
    const added = await t.post(`/api/organizations/${id}/domains`, { domain: `${domain.toUpperCase()}.` }, { token: owner.access });
    expect(added.status).toBe(201);
    expect(added.body.data).toMatchObject({
      domain,
      verified: false,
      verified_at: null,
      verification: { type: 'dns_txt', name: `_account-verification.${domain}` },
    });
    const value = added.body.data.verification.value as string;
    expect(value.length).toBeGreaterThanOrEqual(32);

    // No record yet.
    expectError(
      await t.post(`/api/organizations/${id}/domains/${domain}/verify`, undefined, { token: owner.access }),
      400,
      'VERIFICATION_FAILED',
    );
    // A record holding something else.
    dns.records.set(`_account-verification.${domain}`, ['someone-else', `${value}x`]);
    expectError(
      await t.post(`/api/organizations/${id}/domains/${domain}/verify`, undefined, { token: owner.access }),
      400,
      'VERIFICATION_FAILED',
    );
    const stored = await domains().selectFrom('organization_domains').selectAll().where('domain', '=', domain).executeTakeFirstOrThrow();
    expect(stored.verified_at).toBeNull();

    dns.records.set(`_account-verification.${domain}`, ['v=spf1 -all', value]);
    const verified = await t.post(`/api/organizations/${id}/domains/${domain}/verify`, undefined, { token: owner.access });
    expect(verified.status).toBe(200);
    expect(verified.body.data).toMatchObject({ domain, verified: true });
    const events = await auditTable(t)
      .selectFrom('audit_events')
      .where('event_type', '=', 'organization.domain_verified')
      .selectAll()
      .execute();
    expect(events.some((event) => event.details?.domain === domain && event.details?.organization_id === id)).toBe(true);

    const list = await t.get(`/api/organizations/${id}/domains`, { token: owner.access });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([expect.objectContaining({ domain, verified: true })]);
  });

  it('refuses a domain another organisation has verified, even with the record in place', async () => {
    const domain = uniqueDomain();
    await orgWithDomain(domain, true);
    const other = await orgWithDomain(domain, false);
    dns.records.set(`_account-verification.${domain}`, [other.token]);
    expectError(
      await t.post(`/api/organizations/${other.id}/domains/${domain}/verify`, undefined, { token: other.owner.access }),
      409,
      'CONFLICT',
    );
  });

  it('answers 409 for a domain the organisation has, 422 for what is not a domain, and removes one', async () => {
    const domain = uniqueDomain();
    const { owner, id } = await orgWithDomain(domain, false);
    expectError(await t.post(`/api/organizations/${id}/domains`, { domain }, { token: owner.access }), 409, 'CONFLICT');
    expectError(await t.post(`/api/organizations/${id}/domains`, { domain: '10.0.0.1' }, { token: owner.access }), 422, 'VALIDATION_ERROR');
    expectError(
      await t.post(`/api/organizations/${id}/domains`, { domain: 'localhost' }, { token: owner.access }),
      422,
      'VALIDATION_ERROR',
    );
    expect((await t.delete(`/api/organizations/${id}/domains/${domain}`, { token: owner.access })).status).toBe(204);
    expectError(await t.delete(`/api/organizations/${id}/domains/${domain}`, { token: owner.access }), 404, 'NOT_FOUND');
  });

  it('lets only members with org:update add domains; a non-member is told there is no organisation', async () => {
    const { id } = await orgWithDomain(uniqueDomain(), false);
    const stranger = await verifiedUser(t);
    expectError(await t.post(`/api/organizations/${id}/domains`, { domain: uniqueDomain() }, { token: stranger.access }), 404, 'NOT_FOUND');
  });
});

describe('sign-in policy', () => {
  it('answers the whole policy, and refuses a provider or role that does not exist', async () => {
    const { owner, id } = await orgWithDomain(uniqueDomain(), false);
    const res = await t.put(`/api/organizations/${id}/sign-in`, { mfa_required: true }, { token: owner.access });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ mfa_required: true, identity_provider: null, sso_required: false, auto_join_role: null });
    expectError(
      await t.put(`/api/organizations/${id}/sign-in`, { identity_provider: 'nope' }, { token: owner.access }),
      422,
      'VALIDATION_ERROR',
    );
    expectError(await t.put(`/api/organizations/${id}/sign-in`, { sso_required: true }, { token: owner.access }), 422, 'VALIDATION_ERROR');
    expectError(
      await t.put(`/api/organizations/${id}/sign-in`, { auto_join_role: 'owner' }, { token: owner.access }),
      422,
      'VALIDATION_ERROR',
    );
    expect((await t.get(`/api/organizations/${id}/sign-in`, { token: owner.access })).body.data.mfa_required).toBe(true);
  });

  it('routes an address at a verified domain to the provider, and refuses its password sign-in', async () => {
    const domain = uniqueDomain();
    const { owner, id } = await orgWithDomain(domain, true);
    const provider = await identityProvider();
    const person = await verifiedUser(t, `ada@${domain}`);

    expect((await t.get(`/api/auth/sso?email=ada@${domain}`)).body.data).toBeNull();
    const res = await t.put(
      `/api/organizations/${id}/sign-in`,
      { identity_provider: provider, sso_required: true },
      { token: owner.access },
    );
    expect(res.status).toBe(200);
    const sso = await t.get(`/api/auth/sso?email=${encodeURIComponent(`Grace@${domain.toUpperCase()}`)}`);
    expect(sso.status).toBe(200);
    expect(sso.body.data).toMatchObject({ organization: { id }, provider: { slug: provider, name: 'Acme Okta' } });
    expect((await t.get(`/api/auth/sso?email=ada@${uniqueDomain()}`)).body.data).toBeNull();

    const login = await t.post('/api/auth/login/json', { email: person.email, password: person.password });
    expectError(login, 403, 'SSO_REQUIRED');
    expect(login.body.error.provider).toBe(provider);
    // The owner's own address is elsewhere: their password still works.
    expect((await t.post('/api/auth/login/json', { email: owner.email, password: owner.password })).status).toBe(200);
  });

  it('asks a member without a second factor to enrol one before acting for an organisation with mfa_required', async () => {
    const { owner, id } = await orgWithDomain(uniqueDomain(), false);
    expect((await t.put(`/api/organizations/${id}/sign-in`, { mfa_required: true }, { token: owner.access })).status).toBe(200);
    expectError(
      await t.post('/api/auth/login/json', { email: owner.email, password: owner.password, organization_id: id }),
      403,
      'MFA_ENROLLMENT_REQUIRED',
    );
    expectError(await t.post('/api/auth/refresh', { refresh_token: owner.refresh, organization_id: id }), 403, 'MFA_ENROLLMENT_REQUIRED');
    // Without the organisation, the sign-in goes on.
    expect((await t.post('/api/auth/login/json', { email: owner.email, password: owner.password })).status).toBe(200);
  });

  it('makes a person who verifies an address at the domain a member with auto_join_role', async () => {
    const domain = uniqueDomain();
    const { owner, id } = await orgWithDomain(domain, true);
    expect((await t.put(`/api/organizations/${id}/sign-in`, { auto_join_role: 'member' }, { token: owner.access })).status).toBe(200);
    const person = await t.register({ email: `grace@${domain}` });
    const mine = async () => (await t.get('/api/auth/organizations', { token: person.access })).body.data;
    expect(await mine()).toEqual([]);
    const mail = await smtp.waitFor((m) => m.to.includes(person.email) && m.subject === 'Confirm your e-mail address');
    const token = linkToken(mail, 'verify-email');
    expect((await t.post('/api/auth/verify-email', { token })).status).toBe(200);
    expect(await mine()).toEqual([expect.objectContaining({ organization: expect.objectContaining({ id }), role: 'member' })]);
  });
});
