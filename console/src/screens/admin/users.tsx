import { useState } from 'preact/hooks';
import { Link, useLocation, useSearchParams } from 'wouter-preact';
import { api, ok, type Schemas, type User } from '../../api';
import { Busy, Button, Empty, ErrorMessage, Field, Form, Page, Section, useLoad, When } from '../../ui/kit';
import { textOf } from './people/form';
import { ImportUsers } from './people/import-users';
import { StatusBadge } from './people/status';
import './users.css';

type Status = 'active' | 'inactive' | 'deleted';
const STATUSES: Array<{ value: Status | ''; label: string }> = [
  { value: '', label: 'All but deleted' },
  { value: 'active', label: 'Active' },
  { value: 'inactive', label: 'Disabled' },
  { value: 'deleted', label: 'Deleted' },
];
const PER_PAGE = 25;

type PageMeta = Schemas['PageMeta'];

const isStatus = (value: string): value is Status => value === 'active' || value === 'inactive' || value === 'deleted';

/** The search the address holds, so that a list can be bookmarked and the back button returns to it. */
function searchOf(params: URLSearchParams) {
  const status = params.get('status') ?? '';
  const page = Number(params.get('page'));
  return {
    q: params.get('q')?.trim() || undefined,
    status: isStatus(status) ? status : undefined,
    page: Number.isInteger(page) && page > 0 ? page : 1,
  };
}

function UserList() {
  const [params, setParams] = useSearchParams();
  const search = searchOf(params);
  const loaded = useLoad(
    () =>
      ok(
        api.GET('/api/users', {
          params: { query: { q: search.q, status: search.status, page: search.page, per_page: PER_PAGE, sort: 'email', order: 'asc' } },
        }),
      ),
    [search.q, search.status, search.page],
  );
  const go = (changes: Record<string, string | undefined>) => {
    const next = new URLSearchParams(params);
    for (const [name, value] of Object.entries(changes)) {
      if (value) next.set(name, value);
      else next.delete(name);
    }
    setParams(next);
  };
  const onSearch = (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    go({ q: textOf(form, 'q').trim(), status: textOf(form, 'status'), page: undefined });
  };
  const users = loaded.data?.data ?? [];
  const meta = loaded.data?.meta as PageMeta | undefined;
  return (
    <>
      <form key={`${search.q ?? ''}|${search.status ?? ''}`} class="toolbar" role="search" aria-label="Find users" onSubmit={onSearch}>
        <Field label="Search" hint="Part of an e-mail address or a name">
          <input name="q" type="search" maxLength={100} defaultValue={search.q ?? ''} />
        </Field>
        <Field label="Status">
          <select name="status">
            {STATUSES.map((option) => (
              <option key={option.value} value={option.value} selected={option.value === (search.status ?? '')}>
                {option.label}
              </option>
            ))}
          </select>
        </Field>
        <div class="form-actions">
          <button type="submit" class="button primary">
            Search
          </button>
        </div>
      </form>
      <div class="table-wrap">
        <ErrorMessage error={loaded.error} />
        {loaded.loading ? <Busy label="Loading users…" /> : null}
        {!loaded.loading && !loaded.error && users.length === 0 ? (
          <Empty>
            {search.q || search.status
              ? 'No user matches this search. Try part of the address, another status, or create the user below.'
              : 'There are no users yet. Create one below, or import them.'}
          </Empty>
        ) : null}
        {users.length > 0 ? (
          <table class="users-table">
            <caption>Users{meta ? ` (${meta.total}${search.q ? ' matching' : ''})` : ''}, by e-mail</caption>
            <thead>
              <tr>
                <th scope="col">E-mail</th>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {users.map((user: User) => (
                <tr key={user.id}>
                  <td>
                    <Link href={`/users/${user.id}`}>{user.email}</Link>
                  </td>
                  <td>{user.name}</td>
                  <td>{user.role}</td>
                  <td>
                    <StatusBadge user={user} />
                  </td>
                  <td>
                    <When at={user.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {meta && (meta.has_prev || meta.has_next) ? (
          <nav class="pager" aria-label="Pages of users">
            <Button disabled={!meta.has_prev} onClick={() => go({ page: String(meta.page - 1) })}>
              Previous page
            </Button>
            <span>
              Page {meta.page} of {Math.max(meta.pages, 1)}
            </span>
            <Button disabled={!meta.has_next} onClick={() => go({ page: String(meta.page + 1) })}>
              Next page
            </Button>
          </nav>
        ) : null}
      </div>
    </>
  );
}

function CreateUser() {
  const [, navigate] = useLocation();
  const [formKey, setFormKey] = useState(0);
  return (
    <Section title="Create a user">
      <Form
        key={formKey}
        label="Create a user"
        submit="Create user"
        action={async (data) => {
          const created = await ok(
            api.POST('/api/users', {
              body: {
                name: textOf(data, 'name'),
                email: textOf(data, 'email'),
                password: textOf(data, 'password'),
                role: data.get('role') === 'admin' ? 'admin' : 'user',
                is_active: data.get('is_active') === 'on',
              },
            }),
          );
          setFormKey((n) => n + 1);
          navigate(`/users/${created.data.id}`);
        }}
      >
        <Field label="Name">
          <input name="name" required maxLength={100} autoComplete="off" />
        </Field>
        <Field label="E-mail address">
          <input name="email" type="email" required maxLength={254} autoComplete="off" />
        </Field>
        <Field label="Password" hint="At least 8 characters; tell the person to change it, or send them a reset mail.">
          <input name="password" type="password" required minLength={8} autoComplete="new-password" />
        </Field>
        <Field label="Role">
          <select name="role">
            <option value="user">User</option>
            <option value="admin">Admin</option>
          </select>
        </Field>
        <label class="check">
          <input name="is_active" type="checkbox" defaultChecked />
          Active (may sign in)
        </label>
      </Form>
    </Section>
  );
}

export function Users() {
  return (
    <Page title="Users">
      <UserList />
      <CreateUser />
      <ImportUsers />
    </Page>
  );
}
