import { Page } from '../../ui/kit';

export function Webhooks() {
  return (
    <Page title="Webhooks">
      <p>Coming soon.</p>
    </Page>
  );
}
