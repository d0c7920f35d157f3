import { Page } from '../../ui/kit';

export function UserDetail(_props: { id: string }) {
  return (
    <Page title="User">
      <p>Coming soon.</p>
    </Page>
  );
}
