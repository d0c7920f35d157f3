import { render, type ComponentChild } from 'preact';
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

/** Replaces the page's "Loading" line with the console (Preact keeps what it did not render itself). */
function show(root: HTMLElement, content: ComponentChild): void {
  root.replaceChildren();
  render(content, root);
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
    show(root, <App user={me.data} />);
  } catch (error) {
    show(root, <Failure message={messageOf(error)} retry={!(error instanceof ProviderUnavailable)} />);
  }
}

void start(document.getElementById('app')!);
