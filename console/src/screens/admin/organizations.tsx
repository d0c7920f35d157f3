import { Page } from '../../ui/kit';

export function Organizations() {
  return (
    <Page title="Organisations">
      <p>Coming soon.</p>
    </Page>
  );
}
