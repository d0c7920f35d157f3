import { Page } from '../../ui/kit';

export function Audit() {
  return (
    <Page title="Audit log">
      <p>Coming soon.</p>
    </Page>
  );
}
