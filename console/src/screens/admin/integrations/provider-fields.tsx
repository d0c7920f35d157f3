import type { Schemas } from '../../../api';
import { Field } from '../../../ui/kit';
import { isOn, lines, sameList, text } from './form-data';

type Provider = Schemas['IdentityProvider'];
type Claims = Provider['claims'];

/** The endpoints of a plain OAuth 2.0 provider, as the contract names them. */
export const OAUTH2_URLS = [
  { name: 'authorization_url', label: 'Authorization URL', required: true },
  { name: 'token_url', label: 'Token URL', required: true },
  { name: 'userinfo_url', label: 'User-info URL', required: true },
  { name: 'emails_url', label: 'E-mails URL (optional)', required: false },
] as const;

const URL_HINT = 'https (http only on localhost or 127.0.0.1, for development).';

/** The issuer of an OpenID Connect provider: the endpoints and keys come from its discovery document. */
export function IssuerField(props: { value?: string | null }) {
  return (
    <Field label="Issuer" hint={`Its discovery document is {issuer}/.well-known/openid-configuration. ${URL_HINT}`}>
      <input name="issuer" type="url" required defaultValue={props.value ?? undefined} class="mono" placeholder="https://sso.example.com" />
    </Field>
  );
}

/** The endpoints of a plain OAuth 2.0 provider. */
export function EndpointFields(props: { provider?: Provider }) {
  return (
    <>
      {OAUTH2_URLS.map((url) => (
        <Field
          key={url.name}
          label={url.label}
          hint={url.name === 'emails_url' ? 'Read as GitHub’s /user/emails: the primary address and whether it is verified.' : URL_HINT}
        >
          <input name={url.name} type="url" required={url.required} defaultValue={props.provider?.[url.name] ?? undefined} class="mono" />
        </Field>
      ))}
    </>
  );
}

/** Which fields of the ID token or user-info answer hold who the person is. */
export function ClaimFields(props: { claims?: Claims }) {
  const claims = props.claims ?? { subject: 'id', email: 'email', email_verified: null, name: 'name' };
  return (
    <fieldset class="choices">
      <legend>Claims</legend>
      <span class="field-hint">The fields of the provider’s answer that hold each value; dotted paths reach nested fields.</span>
      <Field label="Subject">
        <input name="claim_subject" required maxLength={100} defaultValue={claims.subject} class="mono" />
      </Field>
      <Field label="E-mail">
        <input name="claim_email" required maxLength={100} defaultValue={claims.email} class="mono" />
      </Field>
      <Field label="E-mail verified" hint="Empty when the provider says nothing about it.">
        <input name="claim_email_verified" maxLength={100} defaultValue={claims.email_verified ?? ''} class="mono" />
      </Field>
      <Field label="Name">
        <input name="claim_name" required maxLength={100} defaultValue={claims.name} class="mono" />
      </Field>
    </fieldset>
  );
}

export function claimsOf(data: FormData): Claims {
  return {
    subject: text(data, 'claim_subject'),
    email: text(data, 'claim_email'),
    email_verified: text(data, 'claim_email_verified') || null,
    name: text(data, 'claim_name'),
  };
}

/** The scopes asked of the provider, separated by spaces; empty for the provider's defaults. */
export function ScopesField(props: { scopes?: string[]; optional?: boolean }) {
  return (
    <Field
      label={props.optional ? 'Scopes (optional)' : 'Scopes'}
      hint={props.optional ? 'Separated by spaces; empty for openid email profile.' : 'Separated by spaces.'}
    >
      <input name="scopes" defaultValue={props.scopes?.join(' ')} required={!props.optional} class="mono" autoComplete="off" />
    </Field>
  );
}

/** Who may sign in with the provider, and whether its addresses count as verified. */
export function PolicyFields(props: { provider?: Provider }) {
  return (
    <>
      <label class="check">
        <input type="checkbox" name="allow_signup" defaultChecked={props.provider?.allow_signup ?? true} />
        <span>Allow sign-up: someone without an account gets one when they sign in</span>
      </label>
      <label class="check">
        <input type="checkbox" name="trust_email" defaultChecked={props.provider?.trust_email ?? false} />
        <span>
          Trust its addresses: an address it reports unverified counts as verified (only for a provider that checks addresses without saying
          so)
        </span>
      </label>
    </>
  );
}

/** What a change to `provider` sends: only the fields that differ from it as it is. */
export function changedProviderFields(provider: Provider, data: FormData): Schemas['UpdateIdentityProviderRequest'] {
  const changes: Schemas['UpdateIdentityProviderRequest'] = {};
  const name = text(data, 'name');
  if (name !== provider.name) changes.name = name;
  const clientId = text(data, 'client_id');
  if (clientId !== provider.client_id) changes.client_id = clientId;
  const secret = text(data, 'client_secret');
  if (secret) changes.client_secret = secret;
  else if (isOn(data, 'remove_secret') && provider.has_client_secret) changes.client_secret = null;
  if (provider.kind === 'oidc') {
    const issuer = text(data, 'issuer');
    if (issuer !== (provider.issuer ?? '')) changes.issuer = issuer;
  } else {
    for (const url of OAUTH2_URLS) {
      const value = text(data, url.name);
      if (value !== (provider[url.name] ?? '')) changes[url.name] = value || null;
    }
  }
  const scopes = lines(data, 'scopes');
  if (!sameList(scopes, provider.scopes)) changes.scopes = scopes;
  const claims = claimsOf(data);
  if ((Object.keys(claims) as Array<keyof Claims>).some((key) => claims[key] !== provider.claims[key])) changes.claims = claims;
  for (const flag of ['allow_signup', 'trust_email'] as const) if (isOn(data, flag) !== provider[flag]) changes[flag] = isOn(data, flag);
  return changes;
}
