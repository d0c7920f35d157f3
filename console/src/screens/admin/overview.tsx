import { Page } from '../../ui/kit';

export function Overview() {
  return (
    <Page title="Overview">
      <p>Coming soon.</p>
    </Page>
  );
}
