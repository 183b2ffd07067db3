import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { auth, buckets } from '../api/resources';
import { account } from '../api/settings';
import { RateLimitNotice } from './rate-limit';
import { useAccountSid, useSession } from '../lib/session';
import { setThemePref, useThemePref, type ThemePref } from '../lib/theme';
import { useQueryState, useSharedHref } from '../lib/url-state';
import { ROUTES } from '../routes';

/** Header (account, bucket and environment switchers, sign-out), navigation, page. */
export function Layout({ children }: { children: ReactNode }) {
  return (
    <Frame
      header={
        <>
          <div className="switchers">
            <AccountSwitcher />
            <BucketSwitcher />
            <EnvironmentFilter />
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
 * The app's frame without a session: brand, theme and navigation around the page. Shown when the
 * session itself cannot be read for now (the API refused it with 429), so the menu stays.
 */
export function FrameOnly({ children }: { children: ReactNode }) {
  return (
    <Frame
      header={
        <div className="user">
          <ThemeSwitch />
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
        <main className="main">
          <RateLimitNotice />
          {children}
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

/** The bucket every traffic page shows; "All buckets" where a page can sum them. */
function BucketSwitcher() {
  const a = useAccountSid();
  const { get, set } = useQueryState();
  const list = useQuery({ queryKey: ['buckets', a], queryFn: () => buckets.list(a) });
  return (
    <label className="switcher">
      <span className="switcher-label">Bucket</span>
      <select
        aria-label="Bucket"
        value={get('bucket') ?? ''}
        onChange={(e) => set({ bucket: e.target.value || null })}
        disabled={list.isPending}
      >
        <option value="">All buckets</option>
        {(list.data?.records ?? []).map((b) => (
          <option key={b.sid} value={b.sid}>
            {b.name}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Environment sids a message lists before "and N more". */
const LISTED_ENVS = 8;

/**
 * The environment every traffic page narrows to (`?env=`). A sid that is not 6 letters or digits
 * is refused; one that no traffic of the account carries is applied but said to be unknown, with
 * the environments seen (from the account, when the session may read it), as a typo is the usual
 * cause.
 */
function EnvironmentFilter() {
  const a = useAccountSid();
  const { can } = useSession();
  const { get, set } = useQueryState();
  const [draft, setDraft] = useState(get('env') ?? '');
  // A key of its own: sharing the account page's would hand that page this (older) copy on mount.
  const seen = useQuery({
    queryKey: ['account', a, 'environments'],
    queryFn: () => account.get(a),
    enabled: can('metrics:read'),
    select: (acc) => acc.environments.map((e) => e.sid),
  });
  const known = seen.data;
  const valid = draft === '' || /^[A-Za-z0-9]{6}$/.test(draft);
  const unknown = valid && draft !== '' && known !== undefined && !known.includes(draft);
  // An environment may have appeared since the list was read: read it again before calling it unknown.
  const { refetch, dataUpdatedAt } = seen;
  useEffect(() => {
    if (unknown && Date.now() - dataUpdatedAt > 10_000) void refetch();
  }, [unknown, dataUpdatedAt, refetch]);
  let problem: string | null = null;
  if (!valid) problem = 'An environment sid is 6 letters or digits, e.g. prod01.';
  else if (unknown) {
    const listed = known.slice(0, LISTED_ENVS).join(', ');
    const more = known.length > LISTED_ENVS ? ` and ${known.length - LISTED_ENVS} more` : '';
    problem =
      known.length === 0
        ? `Unknown environment “${draft}”: no traffic has named an environment yet.`
        : `Unknown environment “${draft}”: no traffic comes from it. Seen in traffic: ${listed}${more}.`;
  }
  return (
    <form
      className="switcher env-filter"
      onSubmit={(e) => {
        e.preventDefault();
        if (valid) set({ env: draft || null });
      }}
    >
      <label className="switcher-label" htmlFor="env-filter">
        Environment
      </label>
      <input
        id="env-filter"
        className={problem ? 'invalid' : ''}
        placeholder="all"
        size={8}
        maxLength={6}
        value={draft}
        aria-invalid={problem ? true : undefined}
        aria-describedby={problem ? 'env-filter-error' : undefined}
        title="An environment sid: 6 letters or digits; empty for all environments"
        onChange={(e) => setDraft(e.target.value.trim())}
        onBlur={() => valid && draft !== (get('env') ?? '') && set({ env: draft || null })}
      />
      {problem ? (
        <div id="env-filter-error" className="env-filter-error" role="alert">
          {problem}
        </div>
      ) : null}
    </form>
  );
}

function UserMenu() {
  const { session } = useSession();
  const qc = useQueryClient();
  const [, navigate] = useLocation();
  const email = session.user?.email ?? 'API token';
  return (
    <div className="user">
      <ThemeSwitch />
      <span className="user-email" title={`${email} (${session.role})`}>
        {email}
        <span className="badge">{session.role}</span>
      </span>
      <button
        type="button"
        className="btn btn-ghost"
        onClick={async () => {
          await auth.signOut().catch(() => undefined);
          qc.clear();
          navigate('/signin', { replace: true });
        }}
      >
        Sign out
      </button>
    </div>
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
