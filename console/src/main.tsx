import { render } from 'preact';
import { api, messageOf, ok } from './api';
import { finishSignIn, ProviderUnavailable, signIn, signedIn } from './auth';
import { App } from './app';
import './styles.css';

function Failure(props: { message: string; retry: boolean }) {
  return (
    <main class="failure">
      <h1>The console could not start</h1>
      <p role="alert">{props.message}</p>
      {props.retry ? (
        <p>
          <a href="/console/">Open the console again</a>
        </p>
      ) : null}
    </main>
  );
}

async function start(root: HTMLElement): Promise<void> {
  try {
    const here = new URL(window.location.href);
    if (here.pathname === '/console/callback') {
      const returnTo = await finishSignIn(here);
      window.history.replaceState(null, '', returnTo);
    } else if (!signedIn()) {
      await signIn(`${here.pathname}${here.search}`);
    }
    const me = await ok(api.GET('/api/auth/me'));
    render(<App user={me.data} />, root);
  } catch (error) {
    render(<Failure message={messageOf(error)} retry={!(error instanceof ProviderUnavailable)} />, root);
  }
}

void start(document.getElementById('app')!);
