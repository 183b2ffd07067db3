import {
  QueryClient,
  QueryClientProvider,
  useQuery,
  useQueryClient,
  type Query,
} from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useState, type ReactNode } from 'react';
import { Redirect, Route, Switch, useLocation } from 'wouter';
import { ApiError, setUnauthorizedHandler } from './api/client';
import { auth } from './api/resources';
import { FrameOnly, Layout } from './components/layout';
import { ErrorBox, Loading } from './components/state';
import { SessionContext, SignOutContext, type SessionContextValue } from './lib/session';
import { ROUTES } from './routes';
import { InvitePage } from './pages/auth/invite';
import { SetupPage } from './pages/auth/setup';
import { SignInPage } from './pages/auth/signin';
import { setupStatusQuery } from './api/queries';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not get better by asking again; network errors and 5xx get one retry.
      retry: (n, err) => n < 1 && !(err instanceof ApiError && err.status >= 400 && err.status < 500),
      // A query that polls catches up as soon as a hidden tab is shown again (its interval is
      // paused while the tab is hidden); the others are not read again on focus.
      refetchOnWindowFocus: (query) =>
        query.observers.some((o) => {
          const every = o.options.refetchInterval;
          return every !== undefined && every !== false && every !== 0;
        }),
      staleTime: 5_000,
    },
  },
});

export function App() {
  return (
    <QueryClientProvider client={queryClient}>
      <Switch>
        <Route path="/signin" component={SignInPage} />
        <Route path="/setup" component={SetupPage} />
        <Route path="/invite/:token" component={InvitePage} />
        <Route>
          <SignedIn>
            <Layout>
              <Switch>
                <Route path="/">
                  <Redirect to="/overview" replace />
                </Route>
                {ROUTES.map((r) => (
                  <Route key={r.path} path={r.path} component={r.component} />
                ))}
                <Route>
                  <div className="page">
                    <h1>Page not found</h1>
                    <p>This address does not match a page of the dashboard.</p>
                  </div>
                </Route>
              </Switch>
            </Layout>
          </SignedIn>
        </Route>
      </Switch>
    </QueryClientProvider>
  );
}

/** Loads the session; without one, sends the person to the first-run page or to sign-in. */
function SignedIn({ children }: { children: ReactNode }) {
  const [location, navigate] = useLocation();
  const qc = useQueryClient();
  const toSignIn = useCallback(() => {
    qc.clear();
    const next = location + window.location.search;
    navigate(`/signin${next && next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`, { replace: true });
  }, [qc, location, navigate]);
  useEffect(() => setUnauthorizedHandler(toSignIn), [toSignIn]);
  const [signingOut, setSigningOut] = useState(false);

  const setup = useQuery({ ...setupStatusQuery, staleTime: Infinity });
  const session = useQuery({
    queryKey: ['session'],
    queryFn: auth.session,
    enabled: setup.data?.needsSetup === false && setup.data.signedIn,
    retry: false,
  });
  const me = useQuery({ queryKey: ['me'], queryFn: auth.me, enabled: session.isSuccess });

  const value = useMemo<SessionContextValue | null>(() => {
    if (!session.data) return null;
    const scopes = new Set(session.data.scopes);
    return {
      session: session.data,
      accounts: me.data?.accounts ?? [],
      can: (scope) => scopes.has(scope),
      refresh: async () => {
        await qc.invalidateQueries();
      },
    };
  }, [session.data, me.data, qc]);

  const signOut = useCallback(async () => {
    // The dashboard's pages give way to "Signing out…", so nothing asks for more, and the calls
    // already on their way finish under the live session (each would answer 401 if the session
    // ended under it). Then the session ends and the sign-in page opens; the session's data is
    // dropped once this component has unmounted (dropped before, its own queries would fetch
    // again at once). The sign-in page's query stays.
    setSigningOut(true);
    const ours = { predicate: (q: Query) => q.queryKey[0] !== 'signin-methods' };
    const until = Date.now() + 3000;
    while (qc.isFetching(ours) > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    await auth.signOut().catch(() => undefined);
    navigate('/signin', { replace: true });
    setTimeout(() => qc.removeQueries(ours), 0);
  }, [qc, navigate]);

  if (setup.data?.needsSetup) return <Redirect to="/setup" replace />;
  if (
    (setup.data && !setup.data.signedIn) ||
    (session.error instanceof ApiError && session.error.status === 401)
  ) {
    const next = location + window.location.search;
    return <Redirect to={`/signin${next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`} replace />;
  }
  // Refused for the quota: the frame and navigation stay, with the time the quota resets (the
  // notice reads everything again then).
  if (session.error instanceof ApiError && session.error.status === 429 && !session.data)
    return (
      <SignOutContext.Provider value={signOut}>
        <FrameOnly>
          <div className="page">
            <ErrorBox error={session.error} onRetry={() => void session.refetch()} />
          </div>
        </FrameOnly>
      </SignOutContext.Provider>
    );
  if (setup.error) return <ErrorBox error={setup.error} onRetry={() => void setup.refetch()} />;
  if (session.error) return <ErrorBox error={session.error} onRetry={() => void session.refetch()} />;
  if (signingOut) return <Loading label="Signing out…" />;
  if (!value) return <Loading label="Opening your dashboard…" />;
  return (
    <SignOutContext.Provider value={signOut}>
      <SessionContext.Provider value={value}>{children}</SessionContext.Provider>
    </SignOutContext.Provider>
  );
}
