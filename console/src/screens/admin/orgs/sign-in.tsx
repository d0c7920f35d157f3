import { useState } from 'preact/hooks';
import { api, ok } from '../../../api';
import { Field, Form, Loading, Notice, Section, useLoad } from '../../../ui/kit';
import { textOf } from './form';
import { RoleOptions, type Role } from './roles';

/** How the organisation's people sign in: a second factor, its identity provider, joining by domain. */
export function SignInPolicy(props: { id: number; roles: Role[] }) {
  const { id } = props;
  const [notice, setNotice] = useState('');
  const loaded = useLoad(
    () =>
      Promise.all([
        ok(api.GET('/api/organizations/{id}/sign-in', { params: { path: { id } } })),
        ok(api.GET('/api/identity-providers')),
      ]).then(([policy, providers]) => ({ policy: policy.data, providers: providers.data })),
    [id],
  );
  // Owners are made by owners, never by a domain.
  const joinRoles = props.roles.filter((role) => role.key !== 'owner');
  return (
    <Section title="Sign-in policy">
      {notice ? <Notice>{notice}</Notice> : null}
      <Loading loaded={loaded} label="Loading the sign-in policy…">
        {({ policy, providers }) => (
          <Form
            key={JSON.stringify(policy)}
            label="Sign-in policy"
            submit="Save sign-in policy"
            action={async (data) => {
              const saved = await ok(
                api.PUT('/api/organizations/{id}/sign-in', {
                  params: { path: { id } },
                  body: {
                    mfa_required: data.get('mfa_required') === 'on',
                    identity_provider: textOf(data, 'identity_provider') || null,
                    sso_required: data.get('sso_required') === 'on',
                    auto_join_role: textOf(data, 'auto_join_role') || null,
                  },
                }),
              );
              setNotice(
                `The sign-in policy is saved${saved.data.sso_required ? ': members at its verified domains sign in only through its identity provider' : ''}.`,
              );
              loaded.reload();
            }}
          >
            <label class="check">
              <input name="mfa_required" type="checkbox" defaultChecked={policy.mfa_required} />
              Members need a second factor to act for the organisation
            </label>
            <Field
              label="Identity provider"
              hint={
                providers.length === 0
                  ? 'No identity provider is set up yet: add one under Identity providers.'
                  : 'People whose address is at a verified domain are sent to it when they sign in.'
              }
            >
              <select name="identity_provider">
                <option value="" selected={policy.identity_provider === null}>
                  None
                </option>
                {providers.map((provider) => (
                  <option key={provider.slug} value={provider.slug} selected={provider.slug === policy.identity_provider}>
                    {provider.name} ({provider.slug})
                  </option>
                ))}
              </select>
            </Field>
            <label class="check">
              <input name="sso_required" type="checkbox" defaultChecked={policy.sso_required} />
              People at its verified domains sign in only through the identity provider
            </label>
            <Field label="Join by domain" hint="Whoever proves an address at a verified domain joins with this role.">
              <select name="auto_join_role">
                <option value="" selected={policy.auto_join_role === null}>
                  Nobody joins by domain
                </option>
                <RoleOptions roles={joinRoles} selected={policy.auto_join_role ?? undefined} />
              </select>
            </Field>
          </Form>
        )}
      </Loading>
    </Section>
  );
}
