import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { isSensitiveRedaction, redactions, type AnyRedaction, type Redaction } from '../../api/rules';
import { ConfirmDialog } from '../../components/dialog';
import { FormError } from '../../components/form';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { SensitiveRedactionForm } from './content-rules';
import { RuleRowEnd } from './rule-row';
import { useRuleList } from './rule-list';
import { RECOMMENDED_REDACTIONS } from '../../../../schemas/recommended-redactions';
import { activeOf, bodyOf, draftOf, labelOf } from './redaction-draft';
import { RedactionForm } from './redaction-form';
import { DataTable } from '../../components/data-table';

/** The same rule with its active flag flipped, in its own shape (PUT keeps the shape). */
function toggled(accountSid: string, x: AnyRedaction): Promise<AnyRedaction> {
  if (isSensitiveRedaction(x))
    return redactions.updateSensitive(accountSid, x.sid, {
      type: x.type,
      level: x.level,
      scopes: x.scopes,
      pattern: x.pattern,
      applyTo: x.applyTo,
      redactAt: x.redactAt,
      description: x.description,
      enabled: !x.enabled,
    });
  return redactions.update(accountSid, x.sid, { ...bodyOf(draftOf(x)), isActive: !x.isActive });
}

/** One click for the recommended rules (every new account starts with them), shown while an account has no redaction at all. */
function RecommendedRedactions({ onAdded }: { onAdded: (count: number) => void }) {
  const accountSid = useAccountSid();
  const qc = useQueryClient();
  const add = useMutation({
    mutationFn: async () => {
      // One after the other: a failure stops at the rule it names, the ones before stay listed.
      for (const r of RECOMMENDED_REDACTIONS)
        await redactions.createSensitive(accountSid, {
          type: r.type,
          level: r.level,
          description: r.description,
          redactAt: 'server',
          enabled: true,
        });
      return RECOMMENDED_REDACTIONS.length;
    },
    onSettled: () => qc.invalidateQueries({ queryKey: ['redactions', accountSid] }),
    onSuccess: onAdded,
  });
  return (
    <div className="stack">
      <p className="small muted">
        Recommended, by data type (every new account starts with them): Authorization headers and credentials,
        passwords, secrets, tokens, cookies, API keys and JSON Web Tokens in full, card numbers but their last
        4 digits. Tapline redacts them before records are stored or sent to a workflow, in every bucket and
        environment; each is an ordinary rule afterwards.
      </p>
      <FormError error={add.error} />
      <div>
        <button
          type="button"
          className="btn btn-primary"
          disabled={add.isPending}
          onClick={() => add.mutate()}
        >
          {add.isPending ? 'Adding…' : 'Add the recommended redactions'}
        </button>
      </div>
    </div>
  );
}

/** Redaction rules: list, create, edit (with a preview), enable/disable, delete. `?rule=` deep-links. */
export function RedactionsPage() {
  const { can } = useSession();
  const { editing, notice, deleting, setDeleting, list, toggle, remove, open, close } =
    useRuleList<AnyRedaction>({
      key: 'redactions',
      list: redactions.list,
      remove: redactions.remove,
      toggled,
      labelOf,
      activeOf,
    });
  return (
    <div className="page">
      <div className="page-head">
        <h1>Redactions</h1>
        {can('redactions:write') && !editing ? (
          <button type="button" className="btn btn-primary" onClick={() => open('new')}>
            New redaction
          </button>
        ) : null}
        {can('redactions:write') && !editing ? (
          <button type="button" className="btn" onClick={() => open('new-type')}>
            Redact a data type
          </button>
        ) : null}
      </div>
      <p className="intro hint">
        A redaction masks, removes, hashes or replaces one field of every record before it is stored or sent
        to a workflow (<code>server</code>), or has SDKs do it before sending (<code>client</code>). Records
        stored earlier keep their values. A redaction by data type finds emails, card numbers, tokens and
        other secrets wherever they appear (headers, query, URL, bodies), or a pattern of your own.
      </p>
      {notice ? (
        <div className="notice ok-text" role="status">
          {notice}
        </div>
      ) : null}
      {editing ? <RedactionEditor key={editing} sid={editing} onClose={close} /> : null}
      <section className="panel" aria-labelledby="redactions-list-title">
        <h2 id="redactions-list-title" className="sr-only">
          Redaction rules
        </h2>
        <FormError error={toggle.error} />
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No redaction rules">
              <p>
                Until a rule exists, traffic is stored as sent: <code>Authorization</code> headers, passwords,
                API keys and card numbers included. Passwords, tokens and card numbers are the usual first
                candidates: e.g. <code>$..password</code> or <code>$.request.headers.authorization</code>.
              </p>
              {can('redactions:write') ? (
                <RecommendedRedactions onAdded={(n) => close(`${n} recommended redactions are added.`)} />
              ) : null}
            </Empty>
          }
        >
          {(d) => (
            <DataTable
              columns={[
                'Name',
                'Field path or type',
                'Action or level',
                'Applied by',
                'Scope',
                'Active',
                'Actions',
              ]}
            >
              {d.records.map((x) => (
                <tr key={x.sid} className={activeOf(x) ? undefined : 'muted'}>
                  {isSensitiveRedaction(x) ? (
                    <>
                      <td>
                        <strong>{x.description || 'By data type'}</strong>
                      </td>
                      <td>
                        <span className="mono">{x.type}</span>
                        {x.pattern !== null ? (
                          <div className="small muted">
                            {x.applyTo === 'key' ? 'keys matching ' : 'values matching '}
                            <code>{x.pattern}</code>
                          </div>
                        ) : null}
                        <div className="small muted">in {x.scopes.join(', ')}</div>
                      </td>
                      <td>{x.level}</td>
                      <td>{x.redactAt === 'server' ? 'Tapline' : 'SDKs and Tapline'}</td>
                    </>
                  ) : (
                    <>
                      <td>
                        <strong>{x.name}</strong>
                        {x.description ? <div className="small muted">{x.description}</div> : null}
                      </td>
                      <td className="mono">{x.fieldPath}</td>
                      <td>
                        {x.redactionType}
                        {x.redactionType === 'replace' && x.replacementValue !== null ? (
                          <span className="muted">
                            {' '}
                            with <code>{x.replacementValue}</code>
                          </span>
                        ) : null}
                      </td>
                      <td>{x.redactAt === 'server' ? 'Tapline' : 'SDKs'}</td>
                    </>
                  )}
                  <RuleRowEnd
                    label={labelOf(x)}
                    buckets={x.buckets}
                    environments={x.environments}
                    active={activeOf(x)}
                    canWrite={can('redactions:write')}
                    canDelete={can('redactions:delete')}
                    toggling={toggle.isPending}
                    onToggle={() => toggle.mutate(x)}
                    onOpen={() => open(x.sid)}
                    onDelete={() => setDeleting(x)}
                  />
                </tr>
              ))}
            </DataTable>
          )}
        </QueryView>
      </section>
      {deleting ? (
        <ConfirmDialog
          title={`Delete the redaction “${labelOf(deleting)}”?`}
          confirmLabel="Delete redaction"
          busy={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(deleting.sid)}
          onClose={() => setDeleting(null)}
        >
          {isSensitiveRedaction(deleting) ? (
            <p>
              From now on <code>{deleting.type}</code> data is stored as sent. The rule is kept as deleted
              (the API lists it with <code>includeDeleted=true</code>); records stored earlier stay redacted.
            </p>
          ) : (
            <p>
              From now on <code>{deleting.fieldPath}</code> is stored as sent
              {deleting.redactAt === 'client'
                ? ' (SDKs stop redacting it at their next settings refresh)'
                : ''}
              . Records stored earlier stay redacted.
            </p>
          )}
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

function RedactionEditor({ sid, onClose }: { sid: string; onClose: (message?: string) => void }) {
  const accountSid = useAccountSid();
  const isNew = sid === 'new' || sid === 'new-type';
  const one = useQuery({
    queryKey: ['redaction', accountSid, sid],
    queryFn: () => redactions.get(accountSid, sid),
    enabled: !isNew,
  });
  if (sid === 'new-type') return <SensitiveRedactionForm onClose={onClose} />;
  if (!isNew && one.isPending) return <Loading />;
  if (!isNew && one.error) return <ErrorBox error={one.error} onRetry={() => void one.refetch()} />;
  if (one.data && isSensitiveRedaction(one.data))
    return <SensitiveRedactionForm existing={one.data} onClose={onClose} />;
  return (
    <RedactionForm existing={isNew ? undefined : (one.data as Redaction | undefined)} onClose={onClose} />
  );
}
