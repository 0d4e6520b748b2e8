// The page frame: the header with the pages, then the page the address names, or the token
// form while the daemon refuses the page's token. The page is keyed by its path, so moving to
// another run or GPU starts it afresh.

import type { AppContext, Page } from '../app';
import type { Match, Place, Route } from '../lib/router';
import { href, sectionOf } from '../lib/router';
import { Header } from './Header';
import { TokenForm } from './TokenForm';

export interface AuthView {
  needed: boolean;
  error: string | null;
  busy: boolean;
  hasToken: boolean;
}

export interface AppProps {
  app: AppContext;
  pages: readonly Route<Page>[];
  place: Place;
  match: Match<Page> | null;
  auth: AuthView;
  onRetry: () => void;
  onToken: (token: string, remember: boolean) => void;
  onForgetToken: () => void;
}

function NotFound({ path }: { path: string }) {
  return (
    <section class="card" data-state="not-found">
      <h2>No page at {path}</h2>
      <p class="note">
        <a href={href('/')}>Back to the live view</a>
      </p>
    </section>
  );
}

export function App({ app, pages, place, match, auth, onRetry, onToken, onForgetToken }: AppProps) {
  const PageC = match?.route.page;
  return (
    <>
      <Header
        store={app.store}
        onRetry={onRetry}
        nav={pages}
        active={sectionOf(match)}
        tokenNeeded={auth.needed}
        hasToken={auth.hasToken}
        onForgetToken={onForgetToken}
      />
      <main data-route={match?.route.path ?? 'none'}>
        {auth.needed ? (
          <TokenForm error={auth.error} busy={auth.busy} onSubmit={onToken} />
        ) : PageC ? (
          <PageC key={place.path} app={app} params={match.params} query={place.query} />
        ) : (
          <NotFound path={place.path} />
        )}
      </main>
    </>
  );
}
