import { Page } from '../../ui/kit';

export function Users() {
  return (
    <Page title="Users">
      <p>Coming soon.</p>
    </Page>
  );
}
