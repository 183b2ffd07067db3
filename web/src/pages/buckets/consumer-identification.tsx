import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { consumers } from '../../api/resources';
import type { ConsumerIdentification, IdentificationSource } from '../../api/types';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { FormError } from '../../components/form';
import { QueryView } from '../../components/state';
import { type Draft, SourceRow, errorsBySource, toDraft, toSource } from './identification-source';
import { IdentificationPreviewForm } from './identification-preview';

/** The API's limit on a bucket's sources. */
const MAX_SOURCES = 10;

/**
 * The bucket's consumer identification (docs/consumers.md): the ordered sources a call without a
 * consumer of its own is identified from, edited here and saved with PUT, the API's messages
 * beside the fields; and a preview of the draft against one of the bucket's recent requests,
 * computed by the API with the processor's code (a credential shows as its keyed-hash id).
 */
export function ConsumerIdentificationPanel({ bucketSid }: { bucketSid: string }) {
  const accountSid = useAccountSid();
  const current = useQuery({
    queryKey: ['consumerIdentification', accountSid, bucketSid],
    queryFn: () => consumers.identification(accountSid, bucketSid),
  });
  return (
    <section className="panel" aria-labelledby="identification-title">
      <h2 id="identification-title">Consumer identification</h2>
      <p className="hint">
        Calls that do not name their consumer (the Node SDK&apos;s <code>tapline.identify</code>,
        OpenTelemetry&apos;s <code>enduser.id</code>) get one from these sources, tried in order until one
        gives a value. A credential (an API key, a bearer token) is never stored: its consumer id is a keyed
        hash of it, shown as <code>key_…</code> until someone names the consumer. Identification runs before
        redaction, so a redacted header still identifies.
      </p>
      <QueryView query={current}>{(d) => <IdentificationForm bucketSid={bucketSid} current={d} />}</QueryView>
    </section>
  );
}

function IdentificationForm({ bucketSid, current }: { bucketSid: string; current: ConsumerIdentification }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const editable = can('buckets:write');
  const [drafts, setDrafts] = useState<Draft[]>(() => current.sources.map(toDraft));
  // A save elsewhere (another tab, settings as code) refills the form.
  useEffect(() => setDrafts(current.sources.map(toDraft)), [current]);
  const save = useMutation({
    mutationFn: (sources: IdentificationSource[]) =>
      consumers.setIdentification(accountSid, bucketSid, sources),
    onSuccess: (saved) => qc.setQueryData(['consumerIdentification', accountSid, bucketSid], saved),
  });
  const sources = drafts.map(toSource);
  // Compared in the form's own shape (field order, defaults), so a saved list reads as unchanged.
  const saved = useMemo(() => JSON.stringify(current.sources.map((x) => toSource(toDraft(x)))), [current]);
  const dirty = JSON.stringify(sources) !== saved;
  const errors = errorsBySource(save.error);
  const change = (key: number, patch: Partial<Draft>) => {
    save.reset();
    setDrafts((list) => list.map((d) => (d.key === key ? { ...d, ...patch } : d)));
  };
  const move = (i: number, by: -1 | 1) => {
    save.reset();
    setDrafts((list) => {
      const next = [...list];
      const [d] = next.splice(i, 1);
      next.splice(i + by, 0, d!);
      return next;
    });
  };
  return (
    <>
      <form
        className="stack identification-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate(sources);
        }}
      >
        <fieldset className="plain" disabled={!editable || save.isPending}>
          <legend className="sr-only">Identification sources, in the order they are tried</legend>
          {drafts.length === 0 ? (
            <p className="muted" data-testid="identification-none">
              No sources: calls get a consumer only from their own records.
            </p>
          ) : (
            <ol className="identification-list">
              {drafts.map((d, i) => (
                <SourceRow
                  key={d.key}
                  draft={d}
                  index={i}
                  count={drafts.length}
                  errors={errors.get(i)}
                  onChange={(patch) => change(d.key, patch)}
                  onMove={(by) => move(i, by)}
                  onRemove={() => {
                    save.reset();
                    setDrafts((list) => list.filter((x) => x.key !== d.key));
                  }}
                />
              ))}
            </ol>
          )}
        </fieldset>
        <FormError error={save.error} shownAt={['sources.*']} />
        {editable ? (
          <div className="actions">
            <button
              type="button"
              className="btn"
              disabled={drafts.length >= MAX_SOURCES || save.isPending}
              title={drafts.length >= MAX_SOURCES ? `At most ${MAX_SOURCES} sources` : undefined}
              onClick={() => {
                save.reset();
                setDrafts((list) => [...list, toDraft({ type: 'header', name: '', hash: true })]);
              }}
            >
              Add a source
            </button>
            {save.isSuccess && !dirty ? (
              <span className="hint ok-text" role="status">
                Saved. The processor applies the sources to new calls within seconds.
              </span>
            ) : null}
            <button type="submit" className="btn btn-primary" disabled={save.isPending || !dirty}>
              {save.isPending ? 'Saving…' : 'Save identification'}
            </button>
          </div>
        ) : (
          <p className="hint">Your role cannot change the identification sources.</p>
        )}
        {current.updatedAt ? (
          <p className="muted small">Last changed {formatDateTime(current.updatedAt)}.</p>
        ) : null}
      </form>
      <IdentificationPreviewForm bucketSid={bucketSid} sources={sources} />
    </>
  );
}
