import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { auth, buckets } from '../api/resources';
import { useAccountSid, useSession } from '../lib/session';
import { useQueryState, useSharedHref } from '../lib/url-state';
import { ROUTES } from '../routes';

/** Header (account, bucket and environment switchers, sign-out), navigation, page. */
export function Layout({ children }: { children: ReactNode }) {
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
        <div className="switchers">
          <AccountSwitcher />
          <BucketSwitcher />
          <EnvironmentFilter />
        </div>
        <UserMenu />
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
        <main className="main">{children}</main>
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

function EnvironmentFilter() {
  const { get, set } = useQueryState();
  const [draft, setDraft] = useState(get('env') ?? '');
  const valid = draft === '' || /^[A-Za-z0-9]{6}$/.test(draft);
  return (
    <form
      className="switcher"
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
        className={valid ? '' : 'invalid'}
        placeholder="all"
        size={8}
        maxLength={6}
        value={draft}
        aria-invalid={!valid}
        title="An environment sid: 6 letters or digits; empty for all environments"
        onChange={(e) => setDraft(e.target.value.trim())}
        onBlur={() => valid && draft !== (get('env') ?? '') && set({ env: draft || null })}
      />
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
