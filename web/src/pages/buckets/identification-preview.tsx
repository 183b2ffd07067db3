import { useMutation, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { consumers, requests } from '../../api/resources';
import type { IdentificationPreview, IdentificationSource } from '../../api/types';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { FormError } from '../../components/form';
import { errorsBySource } from './identification-source';

/** Recent requests offered for the preview. */
const SAMPLES = 20;

/** A source in words, for the preview's answer. */
function describe(s: IdentificationSource): string {
  switch (s.type) {
    case 'header':
      return `request header ${s.name}`;
    case 'query':
      return `query parameter ${s.name}`;
    case 'jwtClaim':
      return `JWT claim ${s.claim}${s.groupClaim ? ` (group: ${s.groupClaim})` : ''}`;
    case 'bearer':
      return 'bearer token';
  }
}

/**
 * The draft sources (saved or not) applied to one recent request of the bucket by the API: which
 * consumer they give it and from which source, beside the consumer it was stored with.
 */
export function IdentificationPreviewForm({
  bucketSid,
  sources,
}: {
  bucketSid: string;
  sources: IdentificationSource[];
}) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const recent = useQuery({
    queryKey: ['requests', accountSid, bucketSid, 'identification-samples'],
    queryFn: () => requests.list(accountSid, bucketSid, { limit: SAMPLES }),
    enabled: can('requests:read'),
  });
  const [picked, setPicked] = useState('');
  const preview = useMutation({
    mutationFn: (requestSid: string) =>
      consumers.previewIdentification(accountSid, bucketSid, sources, requestSid),
  });
  // A changed draft makes the last answer stale: it is cleared rather than shown for other sources.
  const draftKey = JSON.stringify(sources);
  const { reset } = preview;
  useEffect(() => reset(), [draftKey, reset]);
  if (!can('requests:read')) return null;
  const list = recent.data?.records ?? [];
  const requestSid = picked || list[0]?.sid || '';
  const errors = errorsBySource(preview.error);
  return (
    <form
      className="stack preview-panel identification-preview"
      onSubmit={(e) => {
        e.preventDefault();
        if (requestSid) preview.mutate(requestSid);
      }}
    >
      <h3>Preview</h3>
      {recent.isPending ? null : list.length === 0 ? (
        <p className="muted">
          No request stored in this bucket yet: send one to preview the sources against it.
        </p>
      ) : (
        <>
          <div className="field">
            <label htmlFor="identification-sample">A recent request</label>
            <select id="identification-sample" value={requestSid} onChange={(e) => setPicked(e.target.value)}>
              {list.map((r) => (
                <option key={r.sid} value={r.sid}>
                  {`${r.request.method ?? '?'} ${r.request.path ?? r.request.url ?? ''} · ${formatDateTime(r.createdAt)}`}
                </option>
              ))}
            </select>
          </div>
          <div className="actions">
            <button type="submit" className="btn" disabled={preview.isPending || !requestSid}>
              {preview.isPending ? 'Previewing…' : 'Preview the sources'}
            </button>
          </div>
          {errors.size > 0 ? (
            <div className="field-error" role="alert">
              {[...errors]
                .map(
                  ([row, fields]) =>
                    `Source ${row + 1}: ${[...fields].map(([f, m]) => (f ? `${f} ${m}` : m)).join('; ')}`,
                )
                .join(' · ')}
            </div>
          ) : (
            <FormError error={preview.error} />
          )}
          {preview.data ? <PreviewAnswer answer={preview.data} sources={sources} /> : null}
        </>
      )}
    </form>
  );
}

function PreviewAnswer({
  answer,
  sources,
}: {
  answer: IdentificationPreview;
  sources: IdentificationSource[];
}) {
  const from = answer.source !== null ? sources[answer.source] : undefined;
  const stored = answer.storedConsumer;
  return (
    <div className="preview-result" role="status" data-testid="identification-preview">
      {answer.consumer ? (
        <p>
          Consumer <code>{answer.consumer.id}</code>
          {answer.consumer.group ? (
            <>
              {' '}
              in group <code>{answer.consumer.group}</code>
            </>
          ) : null}
          , from source {(answer.source ?? 0) + 1}
          {from ? ` (${describe(from)})` : ''}.
        </p>
      ) : (
        <p>No source gives this request a consumer.</p>
      )}
      {answer.redacted ? (
        <p className="field-error" data-testid="identification-redacted">
          The value source {(answer.source ?? 0) + 1} read is redacted in this stored request: the processor
          identifies a call before redacting it, so the call itself got another id. Pick a request where it is
          not redacted, or compare with the consumer it was stored with.
        </p>
      ) : null}
      <p className="muted small">
        {stored ? (
          <>
            Stored with consumer <code>{stored.id}</code>
            {stored.name ? ` (${stored.name})` : ''}: its own, or the one the sources in force then gave it (a
            call&apos;s own consumer wins over the sources).
          </>
        ) : (
          'Stored without a consumer.'
        )}
      </p>
    </div>
  );
}
