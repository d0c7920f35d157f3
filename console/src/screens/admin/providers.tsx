import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, ok, type Schemas } from '../../api';
import { Busy, Button, ConfirmButton, Empty, ErrorMessage, Field, Form, Loading, Notice, Page, Section, useLoad } from '../../ui/kit';
import { isOn, lines, text } from './integrations/form-data';
import { callbackUrl, microsoftIssuer, PRESET_CHOICES, type PresetChoice, type PresetKey } from './integrations/presets';
import {
  changedProviderFields,
  ClaimFields,
  claimsOf,
  EndpointFields,
  IssuerField,
  OAUTH2_URLS,
  PolicyFields,
  ScopesField,
} from './integrations/provider-fields';
import { selectionHref, useSelection } from './integrations/selection';
import { EnabledBadge, SettingsForm, Timestamps } from './integrations/settings';
import './integrations/integrations.css';

type Provider = Schemas['IdentityProvider'];

/**
 * The upstream providers people may sign in with: the list and adding one from a preset at
 * /console/providers, one provider's page at /console/providers?provider={slug}.
 */
export function Providers() {
  const [selected, open] = useSelection('provider');
  const [notice, setNotice] = useState<string>();
  if (selected !== undefined)
    return (
      <ProviderDetail
        slug={selected}
        notice={notice}
        onDeleted={(name) => {
          setNotice(`${name} was deleted: nobody signs in with it any more.`);
          open(undefined);
        }}
      />
    );
  return (
    <ProviderList
      notice={notice}
      onCreated={(provider) => {
        setNotice(`${provider.name} was added. Register the redirect URI below with ${provider.name} if you have not yet.`);
        open(provider.slug);
      }}
    />
  );
}

function ProviderList(props: { notice?: string; onCreated: (provider: Provider) => void }) {
  const providers = useLoad(() => ok(api.GET('/api/identity-providers')), []);
  return (
    <Page title="Identity providers">
      {props.notice ? <Notice>{props.notice}</Notice> : null}
      <Section title="Providers">
        <Loading loaded={providers} label="Loading the providers…">
          {({ data }) =>
            data.length === 0 ? (
              <Empty>Nobody can sign in with another account yet: add a provider below.</Empty>
            ) : (
              <div class="table-wrap">
                <table>
                  <caption>Providers people may sign in with</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Slug</th>
                      <th scope="col">Kind</th>
                      <th scope="col">Status</th>
                      <th scope="col">Sign-up</th>
                      <th scope="col">Client ID</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.map((provider) => (
                      <tr key={provider.slug}>
                        <td>
                          <Link href={selectionHref('/providers', 'provider', provider.slug)}>{provider.name}</Link>
                        </td>
                        <td class="mono">{provider.slug}</td>
                        <td>{provider.kind === 'oidc' ? 'OpenID Connect' : 'OAuth 2.0'}</td>
                        <td>
                          <EnabledBadge enabled={provider.enabled} />
                        </td>
                        <td>{provider.allow_signup ? 'Allowed' : 'Existing accounts only'}</td>
                        <td class="mono">{provider.client_id}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )
          }
        </Loading>
      </Section>
      <Section title="Add a provider">
        <AddProvider taken={providers.data?.data.map((provider) => provider.slug) ?? []} onCreated={props.onCreated} />
      </Section>
    </Page>
  );
}

/** Adding a provider: the preset first, then only what that preset needs. */
function AddProvider(props: { taken: string[]; onCreated: (provider: Provider) => void }) {
  const [chosen, setChosen] = useState<PresetKey>('google');
  const [slug, setSlug] = useState('');
  // A well-known provider is added once (its slug is its own); the generic ones are always offered.
  const isAdded = (choice: PresetChoice) => choice.slug !== undefined && props.taken.includes(choice.slug);
  const preset =
    PRESET_CHOICES.find((choice) => choice.key === chosen && !isAdded(choice)) ?? PRESET_CHOICES.find((choice) => !isAdded(choice))!;
  const key = preset.key;
  const adding = preset.slug === undefined ? 'Add provider' : `Add ${preset.label}`;
  const effectiveSlug = preset.slug ?? slug;

  const add = async (data: FormData) => {
    const created = await ok(api.POST('/api/identity-providers', { body: creation(preset, data) }));
    props.onCreated(created.data);
  };

  return (
    <div class="form wide">
      <fieldset class="choices presets">
        <legend>Provider</legend>
        {PRESET_CHOICES.map((choice) => {
          const added = isAdded(choice);
          return (
            <label class="check" key={choice.key}>
              <input
                type="radio"
                name="preset"
                value={choice.key}
                checked={key === choice.key}
                disabled={added}
                onChange={() => setChosen(choice.key)}
              />
              <span>
                {choice.label}
                {added ? ' (added)' : ''}
              </span>
            </label>
          );
        })}
      </fieldset>
      <p class="field-hint">{preset.where}</p>
      {/* Keyed by the preset, so that fields of another preset start empty. */}
      <Form key={key} label={adding} submit={adding} action={add}>
        {preset.slug === undefined ? (
          <>
            <Field label="Slug" hint="Its name in addresses: lower-case letters, digits and hyphens.">
              <input
                name="slug"
                required
                maxLength={40}
                pattern="[a-z0-9][a-z0-9\-]{0,39}"
                value={slug}
                onInput={(event) => setSlug(event.currentTarget.value)}
                class="mono"
                autoComplete="off"
              />
            </Field>
            <Field label="Name" hint="What the sign-in page shows: “Sign in with …”.">
              <input name="name" required maxLength={100} autoComplete="off" />
            </Field>
          </>
        ) : (
          <Field label="Name (optional)" hint={`What the sign-in page shows; ${preset.label} when empty.`}>
            <input name="name" maxLength={100} placeholder={preset.label} autoComplete="off" />
          </Field>
        )}
        <p class="field-hint callback">
          Redirect URI to register with the provider: <code>{callbackUrl(effectiveSlug)}</code>
        </p>
        {key === 'microsoft' ? (
          <Field label="Directory (tenant) ID" hint="The issuer becomes https://login.microsoftonline.com/{tenant}/v2.0.">
            <input name="tenant" required maxLength={100} class="mono" autoComplete="off" />
          </Field>
        ) : null}
        {key === 'oidc' ? <IssuerField /> : null}
        {key === 'oauth2' ? <EndpointFields /> : null}
        <Field label="Client ID">
          <input name="client_id" required maxLength={500} class="mono" autoComplete="off" />
        </Field>
        <Field
          label={preset.secretRequired ? 'Client secret' : 'Client secret (optional)'}
          hint={
            preset.secretHint ??
            (preset.secretRequired
              ? 'Kept sealed and never shown again.'
              : 'Kept sealed and never shown again; without one the service signs in as a public client (PKCE alone).')
          }
        >
          <input name="client_secret" type="password" required={preset.secretRequired} maxLength={4000} autoComplete="off" />
        </Field>
        {key === 'oidc' ? <ScopesField optional /> : null}
        {key === 'oauth2' ? (
          <>
            <ScopesField />
            <ClaimFields />
          </>
        ) : null}
        <PolicyFields />
        <label class="check">
          <input type="checkbox" name="enabled" defaultChecked />
          <span>Enabled: offered on the sign-in page at once</span>
        </label>
      </Form>
    </div>
  );
}

/** The registration a preset's form makes: what the preset fills is left out. */
function creation(preset: PresetChoice, data: FormData): Schemas['CreateIdentityProviderRequest'] {
  const body: Schemas['CreateIdentityProviderRequest'] = {
    slug: preset.slug ?? text(data, 'slug'),
    client_id: text(data, 'client_id'),
    enabled: isOn(data, 'enabled'),
    allow_signup: isOn(data, 'allow_signup'),
    trust_email: isOn(data, 'trust_email'),
  };
  const name = text(data, 'name');
  if (name) body.name = name;
  const secret = text(data, 'client_secret');
  if (secret) body.client_secret = secret;
  if (preset.key === 'microsoft') body.issuer = microsoftIssuer(text(data, 'tenant'));
  if (preset.key === 'oidc') {
    body.kind = 'oidc';
    body.issuer = text(data, 'issuer');
    const scopes = lines(data, 'scopes');
    if (scopes.length > 0) body.scopes = scopes;
  }
  if (preset.key === 'oauth2') {
    body.kind = 'oauth2';
    for (const url of OAUTH2_URLS) {
      const value = text(data, url.name);
      if (value) body[url.name] = value;
    }
    body.scopes = lines(data, 'scopes');
    body.claims = claimsOf(data);
  }
  return body;
}

function ProviderDetail(props: { slug: string; notice?: string; onDeleted: (name: string) => void }) {
  const loaded = useLoad(() => ok(api.GET('/api/identity-providers/{slug}', { params: { path: { slug: props.slug } } })), [props.slug]);
  return (
    <Page title={loaded.data?.data.name ?? 'Identity provider'} actions={<Link href="/providers">All identity providers</Link>}>
      {props.notice ? <Notice>{props.notice}</Notice> : null}
      <Loading loaded={loaded} label="Loading the provider…">
        {({ data }) => <ProviderSections provider={data} onChanged={() => loaded.reload()} onDeleted={props.onDeleted} />}
      </Loading>
    </Page>
  );
}

function ProviderSections(props: { provider: Provider; onChanged: () => void; onDeleted: (name: string) => void }) {
  const { provider } = props;
  const path = { slug: provider.slug };
  return (
    <>
      <Section title="Details">
        <dl class="facts">
          <dt>Slug</dt>
          <dd class="mono">{provider.slug}</dd>
          <dt>Kind</dt>
          <dd>{provider.kind === 'oidc' ? 'OpenID Connect' : 'OAuth 2.0'}</dd>
          <dt>Redirect URI</dt>
          <dd class="mono">{callbackUrl(provider.slug)}</dd>
          <dt>Client ID</dt>
          <dd class="mono">{provider.client_id}</dd>
          <dt>Client secret</dt>
          <dd>{provider.has_client_secret ? 'Set (never shown)' : 'None: signs in as a public client'}</dd>
          {provider.kind === 'oidc' ? (
            <>
              <dt>Issuer</dt>
              <dd class="mono">{provider.issuer}</dd>
            </>
          ) : (
            OAUTH2_URLS.map((url) => [
              <dt key={`${url.name}-label`}>{url.label}</dt>,
              <dd key={url.name} class="mono">
                {provider[url.name] ?? '—'}
              </dd>,
            ])
          )}
          <dt>Scopes</dt>
          <dd class="mono">{provider.scopes.join(' ')}</dd>
          <dt>Claims</dt>
          <dd class="mono">
            subject {provider.claims.subject}, email {provider.claims.email}, email_verified {provider.claims.email_verified ?? '—'}, name{' '}
            {provider.claims.name}
          </dd>
          <Timestamps item={provider} />
        </dl>
      </Section>
      <Section title="Status">
        <EnabledToggle provider={provider} onChanged={props.onChanged} />
      </Section>
      <Section title="Settings">
        <SettingsForm
          label={`Settings of ${provider.name}`}
          version={provider.updated_at}
          changes={(data) => changedProviderFields(provider, data)}
          send={async (body) => {
            await ok(api.PUT('/api/identity-providers/{slug}', { params: { path }, body }));
            props.onChanged();
          }}
          done="Saved. Sign-ins already under way finish with the provider as it was."
        >
          <Field label="Name" hint="What the sign-in page shows: “Sign in with …”.">
            <input name="name" required maxLength={100} defaultValue={provider.name} autoComplete="off" />
          </Field>
          <Field label="Client ID">
            <input name="client_id" required maxLength={500} defaultValue={provider.client_id} class="mono" autoComplete="off" />
          </Field>
          <Field label="New client secret" hint="Empty keeps the current one.">
            <input name="client_secret" type="password" maxLength={4000} autoComplete="new-password" />
          </Field>
          {provider.has_client_secret ? (
            <label class="check">
              <input type="checkbox" name="remove_secret" />
              <span>Remove the secret (sign in as a public client, with PKCE alone)</span>
            </label>
          ) : null}
          {provider.kind === 'oidc' ? <IssuerField value={provider.issuer} /> : <EndpointFields provider={provider} />}
          <ScopesField scopes={provider.scopes} />
          <ClaimFields claims={provider.claims} />
          <PolicyFields provider={provider} />
        </SettingsForm>
      </Section>
      <Section title="Delete">
        <p>Deleting the provider ends every way in through it.</p>
        <div class="row-actions">
          <ConfirmButton
            label="Delete provider"
            title={`Delete ${provider.name}?`}
            consequence={
              <p>
                The provider is removed with the identities linked through it and its sign-ins under way: nobody signs in with it any more.
                People whose only way in it was can set a password with “Forgot password”. This cannot be undone.
              </p>
            }
            action={async () => {
              await ok(api.DELETE('/api/identity-providers/{slug}', { params: { path } }));
              props.onDeleted(provider.name);
            }}
          />
        </div>
      </Section>
    </>
  );
}

/** Enabling is harmless and immediate; disabling says first what it does. */
function EnabledToggle(props: { provider: Provider; onChanged: () => void }) {
  const { provider } = props;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const setEnabled = async (enabled: boolean) => {
    await ok(api.PUT('/api/identity-providers/{slug}', { params: { path: { slug: provider.slug } }, body: { enabled } }));
    props.onChanged();
  };
  const enable = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await setEnabled(true);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <p>
        <EnabledBadge enabled={provider.enabled} />{' '}
        {provider.enabled
          ? 'The sign-in page offers it, and people sign in with it.'
          : 'Hidden from the sign-in page; its sign-ins are refused.'}
      </p>
      <div class="row-actions">
        {provider.enabled ? (
          <ConfirmButton
            label="Disable provider"
            title={`Disable ${provider.name}?`}
            consequence={
              <p>
                The sign-in page stops offering it and sign-ins with it are refused. Linked identities are kept: enabling it again lets them
                sign in as before.
              </p>
            }
            confirm="Disable"
            action={() => setEnabled(false)}
          />
        ) : (
          <Button variant="primary" disabled={busy} onClick={() => void enable()}>
            Enable provider
          </Button>
        )}
        {busy ? <Busy label="Enabling…" /> : null}
      </div>
      <ErrorMessage error={error} />
    </>
  );
}
