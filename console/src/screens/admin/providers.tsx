import { Page } from '../../ui/kit';

export function Providers() {
  return (
    <Page title="Identity providers">
      <p>Coming soon.</p>
    </Page>
  );
}
