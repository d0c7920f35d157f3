import { useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../../../api';
import { Busy, Button, ConfirmButton, Empty, ErrorMessage, Field, Form, Loading, Notice, Section, useLoad, When } from '../../../ui/kit';
import { CopyField } from './copy';
import { textOf } from './form';

type Domain = Schemas['OrganizationDomain'];

function DomainItem(props: { id: number; domain: Domain; changed: (notice: string) => void }) {
  const { id, domain, changed } = props;
  const path = { id, domain: domain.domain };
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const verify = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await ok(api.POST('/api/organizations/{id}/domains/{domain}/verify', { params: { path } }));
      changed(`${domain.domain} is verified.`);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <li class="card" aria-label={domain.domain}>
      <header class="card-header">
        <h3>{domain.domain}</h3>
        {domain.verified ? <span class="badge ok">verified</span> : <span class="badge off">not verified</span>}
      </header>
      {domain.verified ? (
        <p>
          Verified <When at={domain.verified_at} />. People who prove an address at it may join and are sent to the organisation’s identity
          provider, as its sign-in policy says.
        </p>
      ) : (
        <div class="record">
          <p>Publish this DNS TXT record at the domain’s DNS host, then verify it. DNS may take a while to answer it.</p>
          <CopyField label={`Record name for ${domain.domain}`} value={domain.verification.name} />
          <CopyField label={`Record value for ${domain.domain}`} value={domain.verification.value} />
        </div>
      )}
      <ErrorMessage error={error} />
      <div class="row-actions">
        {domain.verified ? null : (
          <Button variant="primary" aria-label={`Verify ${domain.domain}`} disabled={busy} onClick={() => void verify()}>
            Verify
          </Button>
        )}
        <ConfirmButton
          label="Remove"
          ariaLabel={`Remove ${domain.domain}`}
          title={`Remove ${domain.domain}?`}
          consequence="Addresses at it no longer join the organisation nor are sent to its identity provider. Adding it again needs a new DNS record."
          confirm="Remove domain"
          action={async () => {
            await ok(api.DELETE('/api/organizations/{id}/domains/{domain}', { params: { path } }));
            changed(`${domain.domain} is removed.`);
          }}
        />
        {busy ? <Busy label={`Looking up the record of ${domain.domain}…`} /> : null}
      </div>
    </li>
  );
}

/** The organisation's domains: added, proven by a DNS TXT record, removed. */
export function Domains(props: { id: number }) {
  const { id } = props;
  const [notice, setNotice] = useState('');
  const [formKey, setFormKey] = useState(0);
  const loaded = useLoad(() => ok(api.GET('/api/organizations/{id}/domains', { params: { path: { id } } })), [id]);
  const changed = (message: string) => {
    setNotice(message);
    loaded.reload();
  };
  return (
    <Section title="Domains">
      {notice ? <Notice>{notice}</Notice> : null}
      <Loading loaded={loaded} label="Loading domains…">
        {({ data: domains }) =>
          domains.length === 0 ? (
            <Empty>No domain yet. Add the organisation’s e-mail domain below, then prove it with a DNS record.</Empty>
          ) : (
            <ul class="domains" aria-label="Domains">
              {domains.map((domain) => (
                <DomainItem key={domain.domain} id={id} domain={domain} changed={changed} />
              ))}
            </ul>
          )
        }
      </Loading>
      <Form
        key={formKey}
        label="Add a domain"
        submit="Add domain"
        action={async (data) => {
          const added = await ok(
            api.POST('/api/organizations/{id}/domains', { params: { path: { id } }, body: { domain: textOf(data, 'domain') } }),
          );
          setFormKey((n) => n + 1);
          changed(`${added.data.domain} is added: publish its DNS record, then verify it.`);
        }}
      >
        <Field label="Domain" hint="The part of the members’ addresses after the @, such as example.com.">
          <input name="domain" required maxLength={253} autoComplete="off" class="mono" />
        </Field>
      </Form>
    </Section>
  );
}
