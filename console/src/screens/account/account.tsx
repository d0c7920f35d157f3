import { Page } from '../../ui/kit';

export function Account() {
  return (
    <Page title="Account">
      <p>Coming soon.</p>
    </Page>
  );
}
