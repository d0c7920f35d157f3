import { Page, useLoad } from '../../ui/kit';
import './account.css';
import { ApiKeys } from './api-keys';
import { Factors, loadFactors } from './factors';
import { Grants } from './grants';
import { Identities } from './identities';
import { Organizations } from './organizations';
import { Passkeys } from './passkeys';
import { Password } from './password';
import { Profile } from './profile';
import { ReauthProvider } from './reauth';
import { Sessions } from './sessions';

/**
 * /console/account, for every signed-in person: their profile and every way in to their account.
 * Adding a way in asks for proof of presence when the sign-in is a few minutes old (ReauthProvider).
 */
export function Account() {
  // Authenticator apps and passkeys are one list in the API: loaded once, shown in two sections.
  const factors = useLoad(loadFactors, []);
  return (
    <Page title="Account">
      <ReauthProvider>
        <Profile />
        <Password />
        <Factors factors={factors} />
        <Passkeys factors={factors} />
        <Sessions />
        <Identities />
        <Grants />
        <ApiKeys />
        <Organizations />
      </ReauthProvider>
    </Page>
  );
}
