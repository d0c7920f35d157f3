import { Page } from '../../ui/kit';

export function Clients() {
  return (
    <Page title="OAuth clients">
      <p>Coming soon.</p>
    </Page>
  );
}
