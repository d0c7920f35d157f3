import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { api, ok, type Schemas } from '../../api';
import { ConfirmButton, Field, Form, Loading, Notice, Page, Section, useLoad, When } from '../../ui/kit';
import { Domains } from './orgs/domains';
import { textOf } from './orgs/form';
import { Invitations } from './orgs/invitations';
import { Members } from './orgs/members';
import { SignInPolicy } from './orgs/sign-in';
import './orgs/orgs.css';

type Organization = Schemas['Organization'];

function Details(props: { organization: Organization; changed: (organization: Organization) => void }) {
  const { organization } = props;
  const [, navigate] = useLocation();
  const [notice, setNotice] = useState('');
  const id = organization.id;
  return (
    <Section
      title="Details"
      actions={
        <ConfirmButton
          label="Delete organisation"
          title={`Delete ${organization.name}?`}
          consequence={
            <p>
              The organisation goes with its memberships, pending invitations, domains and sign-in policy; its members’ accounts stay.
              Sessions acting for it act for none from their next refresh. This cannot be undone.
            </p>
          }
          action={async () => {
            await ok(api.DELETE('/api/organizations/{id}', { params: { path: { id } } }));
            navigate('/organizations');
          }}
        />
      }
    >
      {notice ? <Notice>{notice}</Notice> : null}
      <dl class="facts">
        <dt>Organisation id</dt>
        <dd class="mono">{organization.id}</dd>
        <dt>Created</dt>
        <dd>
          <When at={organization.created_at} />
        </dd>
        <dt>Updated</dt>
        <dd>
          <When at={organization.updated_at} />
        </dd>
      </dl>
      <Form
        key={organization.updated_at}
        label="Name and slug"
        submit="Save"
        action={async (data) => {
          const saved = await ok(
            api.PUT('/api/organizations/{id}', {
              params: { path: { id } },
              body: { name: textOf(data, 'name'), slug: textOf(data, 'slug') },
            }),
          );
          setNotice('The name and slug are saved.');
          props.changed(saved.data);
        }}
      >
        <Field label="Name">
          <input name="name" required maxLength={100} autoComplete="off" defaultValue={organization.name} />
        </Field>
        <Field label="Slug" hint="2 to 48 lower-case letters, digits and hyphens; applications may ask for the organisation by it.">
          <input
            name="slug"
            required
            pattern="[a-z0-9-]{2,48}"
            maxLength={48}
            autoComplete="off"
            class="mono"
            defaultValue={organization.slug}
          />
        </Field>
      </Form>
    </Section>
  );
}

export function OrganizationDetail(props: { id: string }) {
  const id = Number(props.id);
  const loaded = useLoad(
    () =>
      Promise.all([ok(api.GET('/api/organizations/{id}', { params: { path: { id } } })), ok(api.GET('/api/organization-roles'))]).then(
        ([organization, roles]) => ({ organization: organization.data, roles: roles.data }),
      ),
    [id],
  );
  const [renamed, setRenamed] = useState<Organization>();
  const organization = renamed?.id === id ? renamed : loaded.data?.organization;
  return (
    <Page title={organization ? organization.name : 'Organisation'} actions={<Link href="/organizations">All organisations</Link>}>
      <Loading loaded={loaded} label="Loading the organisation…">
        {({ roles }) =>
          organization ? (
            <>
              <Details organization={organization} changed={setRenamed} />
              <Members id={id} roles={roles} />
              <Invitations id={id} roles={roles} />
              <Domains id={id} />
              <SignInPolicy id={id} roles={roles} />
            </>
          ) : null
        }
      </Loading>
    </Page>
  );
}
