import type { Schemas } from '../../../api';
import { Field } from '../../../ui/kit';
import { checked, isOn, lines, sameList, sameSet, text } from './form-data';

type Client = Schemas['OauthClient'];
type GrantType = Schemas['OauthGrantType'];
type Scope = Schemas['OauthScope'];

// Every grant type of the contract, labelled: one the contract adds and this does not name fails the type check.
const GRANT_LABELS: Record<GrantType, string> = {
  authorization_code: 'Authorization code (people sign in)',
  refresh_token: 'Refresh token (stay signed in)',
  client_credentials: 'Client credentials (the program acts as itself; confidential only)',
  'urn:ietf:params:oauth:grant-type:device_code': 'Device code (TVs and command-line tools: a person signs in on another device)',
  'urn:ietf:params:oauth:grant-type:token-exchange':
    'Token exchange (support staff act as a user; confidential only, needs IMPERSONATION_ENABLED)',
};
const GRANTS = Object.entries(GRANT_LABELS).map(([value, label]) => ({ value: value as GrantType, label }));

const SCOPES: Array<{ value: Scope; label: string }> = [
  { value: 'openid', label: 'openid (who the person is)' },
  { value: 'profile', label: 'profile (name)' },
  { value: 'email', label: 'email (address, and whether it is verified)' },
  { value: 'offline_access', label: 'offline_access (refresh tokens)' },
];

const DEFAULT_GRANTS: GrantType[] = ['authorization_code', 'refresh_token'];
const DEFAULT_SCOPES: Scope[] = ['openid', 'profile', 'email', 'offline_access'];

/**
 * The fields of an OAuth client as the contract has them, for registering one (`client` absent: its
 * type is asked too) or changing one (its type stays).
 */
export function ClientFields(props: { client?: Client }) {
  const client = props.client;
  const grants = client?.grant_types ?? DEFAULT_GRANTS;
  const scopes = client?.scopes ?? DEFAULT_SCOPES;
  return (
    <>
      <Field label="Name" hint="What people see when they are asked to allow it.">
        <input name="name" required maxLength={200} defaultValue={client?.name} autoComplete="off" />
      </Field>
      {client ? null : (
        <fieldset class="choices">
          <legend>Type</legend>
          <label class="check">
            <input type="radio" name="type" value="confidential" defaultChecked />
            <span>Confidential: a server-side application, which gets a secret</span>
          </label>
          <label class="check">
            <input type="radio" name="type" value="public" />
            <span>Public: a single-page or native application, with PKCE and no secret</span>
          </label>
        </fieldset>
      )}
      <Field
        label="Redirect URIs"
        hint="One a line, matched exactly: https, http only on localhost or 127.0.0.1, or an app's own scheme (com.example.app:/callback). None for a client with only client credentials."
      >
        <textarea name="redirect_uris" rows={3} class="mono" defaultValue={client?.redirect_uris.join('\n')} />
      </Field>
      <Field label="Post-logout redirect URIs" hint="One a line: where the application may send people after they sign out.">
        <textarea name="post_logout_redirect_uris" rows={2} class="mono" defaultValue={client?.post_logout_redirect_uris.join('\n')} />
      </Field>
      <fieldset class="choices">
        <legend>Grant types</legend>
        {GRANTS.map((grant) => (
          <label class="check" key={grant.value}>
            <input type="checkbox" name="grant_types" value={grant.value} defaultChecked={grants.includes(grant.value)} />
            <span>{grant.label}</span>
          </label>
        ))}
      </fieldset>
      <Field
        label="Back-channel logout URI"
        hint="Optional: where the service posts a signed logout token when a person's session with this application ends (https)."
      >
        <input
          name="backchannel_logout_uri"
          type="url"
          class="mono"
          defaultValue={client?.backchannel_logout_uri ?? ''}
          autoComplete="off"
        />
      </Field>
      <fieldset class="choices">
        <legend>Scopes it may ask for</legend>
        {SCOPES.map((scope) => (
          <label class="check" key={scope.value}>
            <input type="checkbox" name="scopes" value={scope.value} defaultChecked={scopes.includes(scope.value)} />
            <span>{scope.label}</span>
          </label>
        ))}
      </fieldset>
      <label class="check">
        <input type="checkbox" name="first_party" defaultChecked={client?.first_party ?? false} disabled={client?.registered} />
        <span>
          First party: one of your own applications, which people are not asked to allow
          {client?.registered ? ' (not for an application that registered itself)' : ''}
        </span>
      </label>
    </>
  );
}

/** The fields a submitted `ClientFields` form holds, as the contract names them. */
export function clientFields(data: FormData) {
  return {
    name: text(data, 'name'),
    redirect_uris: lines(data, 'redirect_uris'),
    post_logout_redirect_uris: lines(data, 'post_logout_redirect_uris'),
    grant_types: checked<GrantType>(data, 'grant_types'),
    scopes: checked<Scope>(data, 'scopes'),
    first_party: isOn(data, 'first_party'),
    backchannel_logout_uri: text(data, 'backchannel_logout_uri') || null,
  };
}

/** What a change sends: only the fields that differ from the client as it is. */
export function changedClientFields(client: Client, data: FormData): Schemas['UpdateOauthClientRequest'] {
  const next = clientFields(data);
  const changes: Schemas['UpdateOauthClientRequest'] = {};
  if (next.name !== client.name) changes.name = next.name;
  if (!sameList(next.redirect_uris, client.redirect_uris)) changes.redirect_uris = next.redirect_uris;
  if (!sameList(next.post_logout_redirect_uris, client.post_logout_redirect_uris))
    changes.post_logout_redirect_uris = next.post_logout_redirect_uris;
  if (!sameSet(next.grant_types, client.grant_types)) changes.grant_types = next.grant_types;
  if (!sameSet(next.scopes, client.scopes)) changes.scopes = next.scopes;
  if (!client.registered && next.first_party !== client.first_party) changes.first_party = next.first_party;
  if (next.backchannel_logout_uri !== (client.backchannel_logout_uri ?? null)) changes.backchannel_logout_uri = next.backchannel_logout_uri;
  return changes;
}
