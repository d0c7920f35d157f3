import { Link, useLocation, useSearchParams } from 'wouter-preact';
import { api, ok, type Schemas } from '../../api';
import { Busy, Empty, ErrorMessage, Field, Form, Page, Section, useLoad, When } from '../../ui/kit';
import { textOf } from './orgs/form';
import { Pager } from './orgs/pager';
import './orgs/orgs.css';

const PER_PAGE = 25;

/** The search and page the address holds, so that a list can be bookmarked and the back button returns to it. */
function searchOf(params: URLSearchParams) {
  const page = Number(params.get('page'));
  return { q: params.get('q')?.trim() || undefined, page: Number.isInteger(page) && page > 0 ? page : 1 };
}

function OrganizationList() {
  const [params, setParams] = useSearchParams();
  const search = searchOf(params);
  const loaded = useLoad(
    () => ok(api.GET('/api/organizations', { params: { query: { q: search.q, page: search.page, per_page: PER_PAGE } } })),
    [search.q, search.page],
  );
  const go = (changes: { q?: string; page?: number }) => {
    const next = new URLSearchParams(params);
    if ('q' in changes) {
      if (changes.q) next.set('q', changes.q);
      else next.delete('q');
    }
    if (changes.page && changes.page > 1) next.set('page', String(changes.page));
    else next.delete('page');
    setParams(next);
  };
  const onSearch = (event: SubmitEvent) => {
    event.preventDefault();
    go({ q: textOf(new FormData(event.currentTarget as HTMLFormElement), 'q') });
  };
  const organizations = loaded.data?.data ?? [];
  const meta = loaded.data?.meta as Schemas['PageMeta'] | undefined;
  return (
    <>
      <form key={search.q ?? ''} class="toolbar" role="search" aria-label="Find organisations" onSubmit={onSearch}>
        <Field label="Search" hint="Part of a name or a slug">
          <input name="q" type="search" maxLength={100} defaultValue={search.q ?? ''} />
        </Field>
        <div class="form-actions">
          <button type="submit" class="button primary">
            Search
          </button>
        </div>
      </form>
      <div class="table-wrap">
        <ErrorMessage error={loaded.error} />
        {loaded.loading ? <Busy label="Loading organisations…" /> : null}
        {!loaded.loading && !loaded.error && organizations.length === 0 ? (
          <Empty>
            {search.q
              ? 'No organisation matches this search. Try part of its name or slug, or create it below.'
              : 'There are no organisations yet. Create the first one below.'}
          </Empty>
        ) : null}
        {organizations.length > 0 ? (
          <table>
            <caption>Organisations{meta ? ` (${meta.total}${search.q ? ' matching' : ''})` : ''}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Slug</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {organizations.map((organization) => (
                <tr key={organization.id}>
                  <td>
                    <Link href={`/organizations/${organization.id}`}>{organization.name}</Link>
                  </td>
                  <td class="mono">{organization.slug}</td>
                  <td>
                    <When at={organization.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        <Pager label="Pages of organisations" meta={meta} go={(page) => go({ page })} />
      </div>
    </>
  );
}

function CreateOrganization() {
  const [, navigate] = useLocation();
  return (
    <Section title="Create an organisation">
      <p>You become its owner; invite its people from its screen.</p>
      <Form
        label="Create an organisation"
        submit="Create organisation"
        action={async (data) => {
          const slug = textOf(data, 'slug');
          const created = await ok(api.POST('/api/organizations', { body: { name: textOf(data, 'name'), slug: slug || undefined } }));
          navigate(`/organizations/${created.data.id}`);
        }}
      >
        <Field label="Name">
          <input name="name" required maxLength={100} autoComplete="off" />
        </Field>
        <Field label="Slug" hint="2 to 48 lower-case letters, digits and hyphens; made from the name when left empty.">
          <input name="slug" pattern="[a-z0-9-]{2,48}" maxLength={48} autoComplete="off" class="mono" />
        </Field>
      </Form>
    </Section>
  );
}

export function Organizations() {
  return (
    <Page title="Organisations">
      <OrganizationList />
      <CreateOrganization />
    </Page>
  );
}
