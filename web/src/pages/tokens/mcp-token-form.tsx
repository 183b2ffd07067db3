import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { fieldErrors } from '../../api/client';
import { mcpTokens, type McpToken } from '../../api/settings';
import { Field, FormError } from '../../components/form';
import { useAccountSid } from '../../lib/session';
import { useQueryState } from '../../lib/url-state';
import { endOfDay } from './token-parts';
import { useBuckets } from '../../api/queries';

/** The MCP token form: name, environment, buckets and expiry. */
export function CreateMcpToken({
  onCancel,
  onCreated,
}: {
  onCancel: () => void;
  onCreated: (t: McpToken) => Promise<void>;
}) {
  const accountSid = useAccountSid();
  const { get } = useQueryState();
  const bucketList = useBuckets();
  const [name, setName] = useState('');
  const [environmentSid, setEnvironmentSid] = useState(get('env') ?? '');
  const [allBuckets, setAllBuckets] = useState(true);
  const [picked, setPicked] = useState<string[]>([]);
  const [expiresOn, setExpiresOn] = useState('');
  const today = new Date().toISOString().slice(0, 10);
  const create = useMutation({
    mutationFn: () =>
      mcpTokens.create(accountSid, {
        name,
        environmentSid,
        bucketSids: allBuckets ? [] : picked,
        expiresAt: expiresOn ? endOfDay(expiresOn) : null,
      }),
    onSuccess: onCreated,
  });
  const errs = fieldErrors(create.error);
  const bucketErrors = Object.entries(errs)
    .filter(([k]) => k.startsWith('bucketSids'))
    .map(([, v]) => v);
  return (
    <section className="panel" aria-labelledby="new-mcp-title">
      <h2 id="new-mcp-title">New MCP token</h2>
      <form
        className="stack"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <div className="grid-2">
          <Field
            id="mcp-name"
            label="Name"
            required
            maxLength={200}
            placeholder="e.g. Claude on my laptop"
            value={name}
            error={errs.name}
            onChange={(e) => setName(e.target.value)}
          />
          <Field
            id="mcp-environment"
            label="Environment sid"
            required
            maxLength={6}
            placeholder="e.g. prod01"
            hint="6 lowercase letters or digits; the token sees and creates events of this environment only. It cannot be changed later."
            value={environmentSid}
            error={errs.environmentSid}
            onChange={(e) => setEnvironmentSid(e.target.value.trim())}
          />
        </div>
        <fieldset className="field">
          <legend>Buckets</legend>
          <label className="check">
            <input
              type="radio"
              name="mcp-buckets"
              checked={allBuckets}
              onChange={() => setAllBuckets(true)}
            />
            Every bucket of the environment
          </label>
          <label className="check">
            <input
              type="radio"
              name="mcp-buckets"
              checked={!allBuckets}
              onChange={() => setAllBuckets(false)}
            />
            Only these buckets:
          </label>
          {!allBuckets ? (
            <div className="bucket-checks">
              {(bucketList.data?.records ?? []).map((b) => (
                <label key={b.sid} className="check">
                  <input
                    type="checkbox"
                    checked={picked.includes(b.sid)}
                    onChange={(e) =>
                      setPicked((p) => (e.target.checked ? [...p, b.sid] : p.filter((x) => x !== b.sid)))
                    }
                  />
                  {b.name}
                </label>
              ))}
              {bucketList.data?.records.length === 0 ? <span className="muted">No bucket yet.</span> : null}
            </div>
          ) : null}
          {bucketErrors.map((m) => (
            <div key={m} className="field-error" role="alert">
              {m}
            </div>
          ))}
        </fieldset>
        <div className="field">
          <label htmlFor="mcp-expires">Expires at the end of (optional)</label>
          <input
            id="mcp-expires"
            type="date"
            min={today}
            value={expiresOn}
            aria-invalid={errs.expiresAt ? true : undefined}
            aria-describedby="mcp-expires-hint"
            onChange={(e) => setExpiresOn(e.target.value)}
          />
          {errs.expiresAt ? (
            <div className="field-error" role="alert">
              {errs.expiresAt}
            </div>
          ) : (
            <div id="mcp-expires-hint" className="hint">
              Empty = never. An expired token is refused like a revoked one.
            </div>
          )}
        </div>
        <FormError error={create.error} shownAt={['name', 'environmentSid', 'bucketSids.*', 'expiresAt']} />
        <div className="actions">
          <button type="button" className="btn" onClick={onCancel}>
            Cancel
          </button>
          <button
            type="submit"
            className="btn btn-primary"
            disabled={
              create.isPending || !name.trim() || !environmentSid || (!allBuckets && picked.length === 0)
            }
          >
            {create.isPending ? 'Creating…' : 'Create token'}
          </button>
        </div>
      </form>
    </section>
  );
}
