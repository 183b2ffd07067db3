import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { fieldErrors } from '../../api/client';
import { account as accountApi, type Account } from '../../api/settings';
import { Field, FormError } from '../../components/form';
import { Empty, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime, relative } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';
import { DataTable } from '../../components/data-table';

const whole = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const num = (n: number | null | undefined) => (n === null || n === undefined ? '–' : whole.format(n));

/** The account: its name, plan, hourly API allowance and use, and the environments seen in traffic. */
export function AccountPage() {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const accountQuery = useQuery({
    queryKey: ['account', accountSid],
    queryFn: () => accountApi.get(accountSid),
    refetchInterval: 30_000,
  });
  return (
    <div className="page">
      <div className="page-head">
        <h1>Account</h1>
        <Link href={href('/settings/members')}>Members →</Link>
      </div>
      <QueryView query={accountQuery}>
        {(acc) => (
          <>
            <AccountName account={acc} />
            <RateLimitPanel account={acc} />
            <EnvironmentsPanel account={acc} />
          </>
        )}
      </QueryView>
    </div>
  );
}

function AccountName({ account }: { account: Account }) {
  const accountSid = useAccountSid();
  const { can, refresh } = useSession();
  const qc = useQueryClient();
  const [name, setName] = useState(account.name);
  const save = useMutation({
    mutationFn: () => accountApi.update(accountSid, { name }),
    onSuccess: async (updated) => {
      qc.setQueryData(['account', accountSid], updated);
      // The header shows the account's name (from /authentication/me).
      await refresh();
    },
  });
  // Who may rename: the account's administrators (the API decides; this hides the form otherwise).
  const editable = can('users:write');
  return (
    <section className="panel" aria-labelledby="account-name-title">
      <h2 id="account-name-title">Name</h2>
      {editable ? (
        <form
          className="inline-form account-name-form"
          onSubmit={(e) => {
            e.preventDefault();
            save.reset();
            save.mutate();
          }}
        >
          <Field
            id="account-name"
            label="Account name"
            required
            maxLength={200}
            value={name}
            error={fieldErrors(save.error).name}
            onChange={(e) => setName(e.target.value)}
          />
          <button
            type="submit"
            className="btn btn-primary"
            disabled={save.isPending || !name.trim() || name === account.name}
          >
            Save
          </button>
        </form>
      ) : (
        <p>{account.name}</p>
      )}
      <FormError error={save.error} />
      {save.isSuccess ? (
        <p className="hint ok-text" role="status">
          Saved.
        </p>
      ) : null}
      <dl className="facts">
        <dt>Account sid</dt>
        <dd>
          <code>{account.sid}</code>
        </dd>
        <dt>Created</dt>
        <dd>{formatDateTime(account.createdAt)}</dd>
      </dl>
    </section>
  );
}

function RateLimitPanel({ account }: { account: Account }) {
  const { limit, used, resetAt, windowSeconds } = account.rateLimit;
  const share = limit > 0 ? Math.min(1, used / limit) : 1;
  const level = share >= 0.9 ? 'bad' : share >= 0.7 ? 'warn' : 'good';
  const per = windowSeconds === 3600 ? 'hour' : `${num(windowSeconds)} seconds`;
  return (
    <section className="panel" aria-labelledby="plan-title">
      <h2 id="plan-title">Plan and API rate limit</h2>
      <dl className="facts">
        <dt>Plan</dt>
        <dd>
          <span className="badge">{account.plan}</span>
        </dd>
        <dt>Allowance</dt>
        <dd>{`${num(limit)} /v1 requests per ${per}`}</dd>
      </dl>
      <div className="usage">
        <div
          className="usage-bar"
          role="meter"
          aria-label={`Requests used in this ${per}'s window`}
          aria-valuemin={0}
          aria-valuemax={limit}
          aria-valuenow={used}
          aria-valuetext={`${num(used)} of ${num(limit)}`}
        >
          <div className={`usage-fill ${level}`} style={{ width: `${share * 100}%` }} />
        </div>
        <div className="small">
          <strong>{num(used)}</strong> of {num(limit)} used in the current window
          {resetAt ? `; it resets at ${formatDateTime(resetAt)}` : ''}.
        </div>
      </div>
      <p className="hint">
        Every credential of the account shares this count of <code>/v1</code> calls (dashboard included, this
        page too). Ingest and <code>/mcp</code> are not counted. Past the limit, calls get 429 until the
        window resets.
      </p>
    </section>
  );
}

function EnvironmentsPanel({ account }: { account: Account }) {
  const envs = account.environments;
  const href = useSharedHref();
  return (
    <section className="panel" aria-labelledby="envs-title">
      <h2 id="envs-title">Environments seen in traffic</h2>
      {envs.length === 0 ? (
        <Empty title="No environment seen yet">
          Records that carry an <code>environmentSid</code> show up here, with when it was last seen.
        </Empty>
      ) : (
        <DataTable columns={['Environment', 'Last seen', { label: 'Requests', numeric: true }]}>
          {envs.map((e) => (
            <tr key={e.sid}>
              <td>
                <Link className="mono" href={href('/overview', { env: e.sid })}>
                  {e.sid}
                </Link>
              </td>
              <td className="small">
                <span title={formatDateTime(e.lastSeenAt)}>{relative(e.lastSeenAt)}</span>
              </td>
              <td className="num">{num(e.count)}</td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
