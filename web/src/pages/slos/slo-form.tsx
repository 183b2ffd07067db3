import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { fieldErrors } from '../../api/client';
import { slos, type Slo, type SloBody } from '../../api/slos';
import { Dialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import { useAccountSid } from '../../lib/session';
import { slosQuery, useBuckets } from '../../api/queries';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
const WINDOWS = [7, 28, 30] as const;
/** The fields the dialog shows the API's validation messages beside. */
const FIELDS = [
  'name',
  'bucketSid',
  'environmentSid',
  'endpoint',
  'method',
  'sli',
  'sli.thresholdMs',
  'objective',
  'windowDays',
];

/**
 * Creates or replaces an SLO. Nothing is checked in the browser: the API's validation messages
 * are shown beside the field they name (an objective of 100 is refused with the API's words).
 */
export function SloDialog({ existing, onClose }: { existing?: Slo; onClose: () => void }) {
  const accountSid = useAccountSid();
  const qc = useQueryClient();
  const bucketList = useBuckets();
  const [name, setName] = useState(existing?.name ?? '');
  const [bucketSid, setBucketSid] = useState(existing?.bucketSid ?? '');
  const [environmentSid, setEnvironmentSid] = useState(existing?.environmentSid ?? '');
  const [endpoint, setEndpoint] = useState(existing?.endpoint ?? '');
  const [method, setMethod] = useState(existing?.method ?? '');
  const [kind, setKind] = useState<'availability' | 'latency'>(existing?.sli.kind ?? 'availability');
  const [threshold, setThreshold] = useState(String(existing?.sli.thresholdMs ?? 300));
  const [objective, setObjective] = useState(String(existing?.objective ?? 99.9));
  const [windowDays, setWindowDays] = useState(String(existing?.windowDays ?? 30));
  const bucket = bucketSid || bucketList.data?.records[0]?.sid || '';
  const save = useMutation({
    mutationFn: () => {
      const body = {
        name,
        bucketSid: bucket,
        environmentSid: environmentSid.trim() || null,
        endpoint: endpoint.trim() || null,
        method: method || null,
        sli: kind === 'latency' ? { kind, thresholdMs: Number(threshold) } : { kind },
        objective: Number(objective),
        windowDays: Number(windowDays),
      } as SloBody;
      return existing ? slos.update(accountSid, existing.sid, body) : slos.create(accountSid, body);
    },
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: slosQuery(accountSid).queryKey });
      if (existing) {
        await qc.invalidateQueries({ queryKey: ['slo', accountSid, existing.sid] });
        await qc.invalidateQueries({ queryKey: ['sloStatus', accountSid, existing.sid] });
      }
      onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const err = (f: string) => errs[f] ?? errs[f.replace('.', '/')];
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Dialog title={existing ? `Edit ${existing.name}` : 'New SLO'} onClose={onClose}>
      <form className="stack" onSubmit={submit} noValidate>
        <Field
          id="slo-name"
          label="Name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          error={err('name')}
        />
        <div className="field">
          <label htmlFor="slo-bucket">Bucket</label>
          <select
            id="slo-bucket"
            value={bucket}
            onChange={(e) => setBucketSid(e.target.value)}
            aria-invalid={err('bucketSid') ? true : undefined}
            aria-describedby={err('bucketSid') ? 'slo-bucket-error' : undefined}
          >
            {(bucketList.data?.records ?? []).map((b) => (
              <option key={b.sid} value={b.sid}>
                {b.name}
              </option>
            ))}
          </select>
          {err('bucketSid') ? (
            <div id="slo-bucket-error" className="field-error" role="alert">
              {err('bucketSid')}
            </div>
          ) : null}
        </div>
        <Field
          id="slo-env"
          label="Environment (optional)"
          value={environmentSid}
          placeholder="every environment"
          onChange={(e) => setEnvironmentSid(e.target.value)}
          error={err('environmentSid')}
        />
        <div className="form-row">
          <div className="field">
            <label htmlFor="slo-method">Method</label>
            <select id="slo-method" value={method} onChange={(e) => setMethod(e.target.value)}>
              <option value="">Every method</option>
              {METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </div>
          <Field
            id="slo-endpoint"
            label="Endpoint (optional)"
            value={endpoint}
            placeholder="/users/{id}"
            onChange={(e) => setEndpoint(e.target.value)}
            error={err('endpoint')}
          />
        </div>
        <div className="form-row">
          <div className="field">
            <label htmlFor="slo-kind">Good calls are</label>
            <select
              id="slo-kind"
              value={kind}
              onChange={(e) => setKind(e.target.value as 'availability' | 'latency')}
            >
              <option value="availability">answers other than 5xx (availability)</option>
              <option value="latency">calls under a time (latency)</option>
            </select>
            {err('sli') ? (
              <div className="field-error" role="alert">
                {err('sli')}
              </div>
            ) : null}
          </div>
          {kind === 'latency' ? (
            <Field
              id="slo-threshold"
              label="Threshold (ms)"
              type="number"
              step="any"
              value={threshold}
              onChange={(e) => setThreshold(e.target.value)}
              error={err('sli.thresholdMs')}
            />
          ) : null}
        </div>
        <div className="form-row">
          <Field
            id="slo-objective"
            label="Objective (% good)"
            type="number"
            step="any"
            value={objective}
            onChange={(e) => setObjective(e.target.value)}
            error={err('objective')}
            hint="e.g. 99.9"
          />
          <div className="field">
            <label htmlFor="slo-window">Window</label>
            <select id="slo-window" value={windowDays} onChange={(e) => setWindowDays(e.target.value)}>
              {WINDOWS.map((w) => (
                <option key={w} value={w}>
                  {w} days
                </option>
              ))}
            </select>
          </div>
        </div>
        <FormError error={save.error} shownAt={FIELDS} />
        <div className="actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={save.isPending || !bucket}>
            {existing ? 'Save SLO' : 'Create SLO'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
