import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { apiTokens, type ApiToken } from '../../api/settings';
import { RemoveDialog } from '../../components/dialog';
import { FormError } from '../../components/form';
import { scopeSummary } from './scope-picker';
import { Empty, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { NewSecret, lastUsed } from './token-parts';
import { CreateApiToken, type Draft, EMPTY_DRAFT } from './api-token-form';
import { DataTable } from '../../components/data-table';

/** API tokens: list, create (scope grid and presets, value shown once), (de)activate, delete. */
export function TokensPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ['apiTokens', accountSid], queryFn: () => apiTokens.list(accountSid) });
  const [draft, setDraft] = useState<Draft | null>(null);
  const [created, setCreated] = useState<ApiToken | null>(null);
  const [deleting, setDeleting] = useState<ApiToken | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: ['apiTokens', accountSid] });

  const toggle = useMutation({
    mutationFn: (t: ApiToken) => apiTokens.update(accountSid, t.sid, { name: t.name, isActive: !t.isActive }),
    onSuccess: refresh,
  });
  const replace = (t: ApiToken) => {
    setCreated(null);
    setDraft({ ...EMPTY_DRAFT, name: t.name, description: t.description, scopes: [...t.scopes] });
    window.scrollTo({ top: 0 });
  };

  return (
    <div className="page">
      <div className="page-head">
        <h1>API tokens</h1>
        {can('tokens:write') && !draft ? (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              setCreated(null);
              setDraft(EMPTY_DRAFT);
            }}
          >
            Create API token
          </button>
        ) : null}
      </div>
      <p className="hint intro">
        Tokens authenticate scripts, CI jobs and SDKs against <code>/v1</code> and the ingest listener. A
        token's scopes, value and expiry never change: to change them, create a replacement and delete the old
        one.
      </p>
      {draft ? (
        <CreateApiToken
          initial={draft}
          onCancel={() => setDraft(null)}
          onCreated={async (t) => {
            setDraft(null);
            setCreated(t);
            await refresh();
          }}
        />
      ) : null}
      {created?.token ? (
        <NewSecret value={created.token} onDone={() => setCreated(null)}>
          <p className="small">
            “{created.name}” ({scopeSummary(created.scopes, created.role)}). Send it as{' '}
            <code>Authorization: Bearer …</code>.
          </p>
        </NewSecret>
      ) : null}
      <section className="panel" aria-label="API tokens">
        {toggle.error ? <FormError error={toggle.error} /> : null}
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No API token yet">
              Create one to send traffic from an SDK or read the API from a script.
            </Empty>
          }
        >
          {(d) => (
            <DataTable
              columns={['Name', 'Token', 'Scopes', 'Role', 'Status', 'Last used', 'Expires', '']}
              wrapClassName="tokens-table"
            >
              {d.records.map((t) => {
                const expired = t.expiresAt !== null && Date.parse(t.expiresAt) < Date.now();
                return (
                  <tr key={t.sid}>
                    <td>
                      <strong>{t.name}</strong>
                      {t.description ? <div className="muted small">{t.description}</div> : null}
                      {t.environmentSid ? (
                        <div className="muted small">environment {t.environmentSid}</div>
                      ) : null}
                    </td>
                    <td className="mono small nowrap" title={`Record ${t.sid}; the value was shown once`}>
                      at_…••••
                    </td>
                    <td className="small" title={t.scopes.join(', ')}>
                      {scopeSummary(t.scopes, t.role)}
                    </td>
                    <td>
                      <span className="badge">{t.role}</span>
                    </td>
                    <td>
                      {expired ? (
                        <span className="badge badge-off">expired</span>
                      ) : t.isActive ? (
                        <span className="badge badge-ok">active</span>
                      ) : (
                        <span className="badge badge-pending">inactive</span>
                      )}
                    </td>
                    <td className="small nowrap">{lastUsed(t.lastUsedAt)}</td>
                    <td className="small nowrap">{t.expiresAt ? formatDateTime(t.expiresAt) : 'never'}</td>
                    <td>
                      <div className="row-actions">
                        {can('tokens:write') ? (
                          <>
                            <button
                              type="button"
                              className="btn btn-small"
                              disabled={toggle.isPending}
                              onClick={() => toggle.mutate(t)}
                              aria-label={`${t.isActive ? 'Deactivate' : 'Activate'} ${t.name}`}
                            >
                              {t.isActive ? 'Deactivate' : 'Activate'}
                            </button>
                            <button
                              type="button"
                              className="btn btn-small"
                              title="Scopes and expiry cannot be changed: create a new token with the same scopes"
                              onClick={() => replace(t)}
                              aria-label={`Replace ${t.name}`}
                            >
                              Replace
                            </button>
                          </>
                        ) : null}
                        {can('tokens:delete') ? (
                          <button
                            type="button"
                            className="btn btn-small btn-danger-ghost"
                            onClick={() => setDeleting(t)}
                            aria-label={`Delete ${t.name}`}
                          >
                            Delete
                          </button>
                        ) : null}
                      </div>
                    </td>
                  </tr>
                );
              })}
            </DataTable>
          )}
        </QueryView>
      </section>
      {deleting ? (
        <DeleteApiToken token={deleting} onClose={() => setDeleting(null)} onDone={refresh} />
      ) : null}
    </div>
  );
}

function DeleteApiToken({
  token,
  onClose,
  onDone,
}: {
  token: ApiToken;
  onClose: () => void;
  onDone: () => Promise<unknown>;
}) {
  const accountSid = useAccountSid();
  return (
    <RemoveDialog
      title={`Delete “${token.name}”?`}
      confirmLabel="Delete token"
      remove={() => apiTokens.remove(accountSid, token.sid)}
      onDone={onDone}
      onClose={onClose}
    >
      <p>
        Every client using this token is refused (401) from its next request. The token is removed for good;
        to stop it only for a while, deactivate it instead.
      </p>
    </RemoveDialog>
  );
}
