import { Page } from '../../ui/kit';

export function Invitation(_props: { id: string }) {
  return (
    <Page title="Invitation">
      <p>Coming soon.</p>
    </Page>
  );
}
