import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Link, Route, Router, Switch, useLocation } from 'wouter-preact';
import { api, ok, type User } from './api';
import { signOut } from './auth';
import { MeContext, useMe, type Me } from './me';
import { Button, Page } from './ui/kit';
import { Account } from './screens/account/account';
import { Invitation } from './screens/account/invitation';
import { Audit } from './screens/admin/audit';
import { Clients } from './screens/admin/clients';
import { OrganizationDetail } from './screens/admin/organization';
import { Organizations } from './screens/admin/organizations';
import { Overview } from './screens/admin/overview';
import { Providers } from './screens/admin/providers';
import { Roles } from './screens/admin/roles';
import { UserDetail } from './screens/admin/user';
import { Users } from './screens/admin/users';
import { Webhooks } from './screens/admin/webhooks';

const ADMIN_SCREENS: Array<{ path: string; label: string }> = [
  { path: '/', label: 'Overview' },
  { path: '/users', label: 'Users' },
  { path: '/audit', label: 'Audit log' },
  { path: '/clients', label: 'OAuth clients' },
  { path: '/providers', label: 'Identity providers' },
  { path: '/webhooks', label: 'Webhooks' },
  { path: '/organizations', label: 'Organisations' },
  { path: '/roles', label: 'Roles' },
];

function NavLink(props: { href: string; children: ComponentChildren }) {
  const [location] = useLocation();
  const current = props.href === '/' ? location === '/' : location === props.href || location.startsWith(`${props.href}/`);
  return (
    <Link href={props.href} aria-current={current ? 'page' : undefined}>
      {props.children}
    </Link>
  );
}

/** A screen for admins only: others are told so rather than shown the API's 403. */
function AdminOnly(props: { children: ComponentChildren }) {
  const me = useMe();
  if (!me.isAdmin)
    return (
      <Page title="For admins">
        <p>
          This screen is for the service’s admins. Your own account is under <Link href="/account">Account</Link>.
        </p>
      </Page>
    );
  return <>{props.children}</>;
}

function Shell(props: { me: Me }) {
  const { user, isAdmin } = props.me;
  const [location] = useLocation();
  // A new screen takes the focus to its heading, so that keyboard and screen-reader users start there.
  useEffect(() => {
    document.getElementById('page-title')?.focus({ preventScroll: true });
  }, [location]);
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Console</span>
        <span class="who">
          <span class="who-name">{user.name || user.email}</span>
          <Button onClick={() => void signOut()}>Sign out</Button>
        </span>
      </header>
      <nav class="nav" aria-label="Console">
        <ul>
          {isAdmin
            ? ADMIN_SCREENS.map((screen) => (
                <li key={screen.path}>
                  <NavLink href={screen.path}>{screen.label}</NavLink>
                </li>
              ))
            : null}
          <li>
            <NavLink href="/account">Account</NavLink>
          </li>
        </ul>
      </nav>
      <main id="main" class="main">
        <Switch>
          <Route path="/">{isAdmin ? <Overview /> : <Account />}</Route>
          <Route path="/account">
            <Account />
          </Route>
          <Route path="/invitations/:id">{(params: { id: string }) => <Invitation id={params.id} />}</Route>
          <Route path="/users">
            <AdminOnly>
              <Users />
            </AdminOnly>
          </Route>
          <Route path="/users/:id">
            {(params: { id: string }) => (
              <AdminOnly>
                <UserDetail id={params.id} />
              </AdminOnly>
            )}
          </Route>
          <Route path="/audit">
            <AdminOnly>
              <Audit />
            </AdminOnly>
          </Route>
          <Route path="/clients">
            <AdminOnly>
              <Clients />
            </AdminOnly>
          </Route>
          <Route path="/providers">
            <AdminOnly>
              <Providers />
            </AdminOnly>
          </Route>
          <Route path="/webhooks">
            <AdminOnly>
              <Webhooks />
            </AdminOnly>
          </Route>
          <Route path="/organizations">
            <AdminOnly>
              <Organizations />
            </AdminOnly>
          </Route>
          <Route path="/organizations/:id">
            {(params: { id: string }) => (
              <AdminOnly>
                <OrganizationDetail id={params.id} />
              </AdminOnly>
            )}
          </Route>
          <Route path="/roles">
            <AdminOnly>
              <Roles />
            </AdminOnly>
          </Route>
          <Route>
            <Page title="Not found">
              <p>
                There is no screen at this address. <Link href="/">Go to the start</Link>.
              </p>
            </Page>
          </Route>
        </Switch>
      </main>
    </div>
  );
}

/** The console once signed in: who the person is decides what they see. */
export function App(props: { user: User }) {
  const [user, setUser] = useState(props.user);
  const me: Me = {
    user,
    isAdmin: user.role === 'admin',
    refresh: async () => setUser((await ok(api.GET('/api/auth/me'))).data),
  };
  return (
    <MeContext.Provider value={me}>
      <Router base="/console">
        <Shell me={me} />
      </Router>
    </MeContext.Provider>
  );
}
