import { Page } from '../../ui/kit';

export function OrganizationDetail(_props: { id: string }) {
  return (
    <Page title="Organisation">
      <p>Coming soon.</p>
    </Page>
  );
}
