import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useContext, useEffect, useState, type ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { auth } from '../api/resources';
import { account } from '../api/settings';
import { ConsumerFilter } from './consumer-filter';
import { RateLimitNotice, RateLimitNoticeShown } from './rate-limit';
import { SignOutContext, useAccountSid, useSession } from '../lib/session';
import { setThemePref, useThemePref, type ThemePref } from '../lib/theme';
import { useQueryState, useSharedHref } from '../lib/url-state';
import { ROUTES } from '../routes';
import { useBuckets } from '../api/queries';

/** Header (account, bucket, environment and consumer filters, sign-out), navigation, page. */
export function Layout({ children }: { children: ReactNode }) {
  return (
    <Frame
      header={
        <>
          <div className="switchers">
            <AccountSwitcher />
            <BucketSwitcher />
            <EnvironmentFilter />
            <ConsumerFilter />
          </div>
          <UserMenu />
        </>
      }
    >
      {children}
    </Frame>
  );
}

/**
 * The app's frame without a session: brand, theme, Sign out and navigation around the page. Shown
 * when the session itself cannot be read for now (the API refused it with 429), so the menu and the
 * way out stay.
 */
export function FrameOnly({ children }: { children: ReactNode }) {
  return (
    <Frame
      header={
        <div className="user">
          <ThemeSwitch />
          <SignOutButton />
        </div>
      }
    >
      {children}
    </Frame>
  );
}

function Frame({ header, children }: { header: ReactNode; children: ReactNode }) {
  const [location] = useLocation();
  const href = useSharedHref();
  const [menuOpen, setMenuOpen] = useState(false);
  const nav = ROUTES.filter((r) => r.nav);
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href={href('/overview')} className="brand" aria-label="Tapline overview">
          <img src="/favicon.svg" alt="" width={22} height={22} />
          <span>Tapline</span>
        </Link>
        <button
          type="button"
          className="btn btn-ghost menu-toggle"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen((o) => !o)}
        >
          Menu
        </button>
        {header}
      </header>
      <div className="body">
        <nav id="main-nav" className={`sidenav${menuOpen ? ' open' : ''}`} aria-label="Main">
          {(['traffic', 'settings'] as const).map((group) => (
            <div key={group} className="nav-group">
              <div className="nav-title">{group === 'traffic' ? 'Traffic' : 'Settings'}</div>
              {nav
                .filter((r) => r.nav?.group === group)
                .map((r) => (
                  <Link
                    key={r.path}
                    href={href(r.path)}
                    className={`nav-link${location.startsWith(r.path) ? ' active' : ''}`}
                    aria-current={location.startsWith(r.path) ? 'page' : undefined}
                    onClick={() => setMenuOpen(false)}
                  >
                    {r.nav?.label}
                  </Link>
                ))}
            </div>
          ))}
        </nav>
        <main id="main" className="main" tabIndex={-1}>
          <RateLimitNotice />
          <RateLimitNoticeShown.Provider value={true}>{children}</RateLimitNoticeShown.Provider>
        </main>
      </div>
    </div>
  );
}

function AccountSwitcher() {
  const { session, accounts } = useSession();
  const qc = useQueryClient();
  const [, navigate] = useLocation();
  if (accounts.length <= 1) {
    const name = accounts[0]?.name;
    return name ? (
      <span className="account-name" title="Account">
        {name}
      </span>
    ) : null;
  }
  return (
    <label className="switcher">
      <span className="sr-only">Account</span>
      <select
        value={session.accountSid}
        onChange={async (e) => {
          await auth.switchAccount(e.target.value);
          qc.clear();
          navigate('/overview');
        }}
      >
        {accounts.map((a) => (
          <option key={a.sid} value={a.sid}>
            {a.name}
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * The bucket every traffic page shows; "All buckets" where a page can sum them. An account with
 * exactly one bucket has nothing to pick: that bucket is put in the URL, so no page asks for one.
 */
function BucketSwitcher() {
  const { get, set } = useQueryState();
  const list = useBuckets();
  const records = list.data?.records ?? [];
  const only = records.length === 1 ? records[0]!.sid : null;
  const current = get('bucket');
  useEffect(() => {
    if (only && !current) set({ bucket: only }, { replace: true });
  }, [only, current, set]);
  return (
    <label className="switcher">
      <span className="switcher-label">Bucket</span>
      <select
        aria-label="Bucket"
        value={current ?? ''}
        onChange={(e) => set({ bucket: e.target.value || null })}
        disabled={list.isPending}
      >
        {only ? null : <option value="">All buckets</option>}
        {records.map((b) => (
          <option key={b.sid} value={b.sid}>
            {b.name}
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * The environment every traffic page narrows to (`?env=`), picked from the environments seen in
 * the account's traffic (GET /v1/accounts/{a}: `environments`). A sid in the URL that no traffic
 * carries (an old link, a typo) stays listed, marked as without traffic, so the page says what it
 * shows.
 */
function EnvironmentFilter() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const { get, set } = useQueryState();
  const current = get('env') ?? '';
  // A key of its own: sharing the account page's would hand that page this (older) copy on mount.
  const seen = useQuery({
    queryKey: ['account', accountSid, 'environments'],
    queryFn: () => account.get(accountSid),
    enabled: can('metrics:read'),
    select: (acc) => acc.environments.map((e) => e.sid).sort(),
    staleTime: 60_000,
  });
  const known = seen.data ?? [];
  const unknown = current !== '' && seen.data !== undefined && !known.includes(current);
  return (
    <label className="switcher">
      <span className="switcher-label">Environment</span>
      <select
        aria-label="Environment"
        value={current}
        title={known.length === 0 ? 'No traffic has named an environment yet' : undefined}
        onChange={(e) => set({ env: e.target.value || null })}
      >
        <option value="">All environments</option>
        {known.map((sid) => (
          <option key={sid} value={sid}>
            {sid}
          </option>
        ))}
        {current !== '' && !known.includes(current) ? (
          <option value={current}>{unknown ? `${current} (no traffic)` : current}</option>
        ) : null}
      </select>
    </label>
  );
}

function UserMenu() {
  const { session } = useSession();
  const email = session.user?.email ?? 'API token';
  return (
    <div className="user">
      <ThemeSwitch />
      <span className="user-email" title={`${email} (${session.role})`}>
        {email}
        <span className="badge">{session.role}</span>
      </span>
      <SignOutButton />
    </div>
  );
}

/** Ends the session and opens the sign-in page; the API never refuses it for the rate limit. */
function SignOutButton() {
  const signOut = useContext(SignOutContext);
  return (
    <button type="button" className="btn btn-ghost" onClick={() => void signOut()}>
      Sign out
    </button>
  );
}

/** Light, dark, or the system's setting (the default); kept in this browser (localStorage). */
export function ThemeSwitch() {
  const pref = useThemePref();
  return (
    <label className="switcher theme-switch">
      <span className="sr-only">Theme</span>
      <select aria-label="Theme" value={pref} onChange={(e) => setThemePref(e.target.value as ThemePref)}>
        <option value="system">System theme</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}
