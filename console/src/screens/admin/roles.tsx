import { Page } from '../../ui/kit';

export function Roles() {
  return (
    <Page title="Roles">
      <p>Coming soon.</p>
    </Page>
  );
}
