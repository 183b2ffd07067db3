/**
 * The template variable picker of the workflow editor: every variable with its value rendered
 * by the server's renderer (POST …/workflows/preview) on a real stored request of the bucket,
 * and a button inserting `{{name}}` into the action field that last had the focus.
 */
import type { WorkflowPreview } from '../../api/workflows';
import { ErrorBox, Loading } from '../../components/state';

export function VariablePicker({
  preview,
  error,
  pending,
  canInsert,
  onInsert,
  requestSid,
  onRequestSid,
  waiting,
}: {
  preview: WorkflowPreview | undefined;
  error: unknown;
  pending: boolean;
  canInsert: boolean;
  onInsert: (name: string) => void;
  requestSid: string;
  onRequestSid: (sid: string) => void;
  /** why there is no preview yet (e.g. no bucket chosen), shown instead of it */
  waiting?: string;
}) {
  return (
    <section className="panel wf-vars" aria-labelledby="wf-vars-title">
      <h2 id="wf-vars-title">Template variables</h2>
      <div className="field">
        <label htmlFor="wf-sample">Sample request sid</label>
        <input
          id="wf-sample"
          className="mono"
          placeholder="newest stored request"
          value={requestSid}
          onChange={(e) => onRequestSid(e.target.value.trim())}
        />
      </div>
      {waiting && !preview ? <p className="hint">{waiting}</p> : null}
      {pending && !preview ? <Loading label="Rendering on a sample…" /> : null}
      {error ? <ErrorBox error={error} /> : null}
      {preview ? (
        <>
          <p className="hint" data-testid="wf-sample">
            Example values from {preview.sample.kind === 'stored' ? 'the stored request ' : ''}
            {preview.sample.description}.{' '}
            {canInsert
              ? 'Insert puts the variable at the cursor of the field you last clicked.'
              : 'Click into an action field, then insert.'}
          </p>
          {/* The list scrolls on its own: focusable so a keyboard can scroll it even while its
              insert buttons are disabled. */}
          <ul className="wf-var-list" tabIndex={0} aria-label="Template variables with example values">
            {preview.variables.map((v) => (
              <li key={v.name}>
                <button
                  type="button"
                  className="btn btn-small btn-ghost mono"
                  disabled={!canInsert}
                  aria-label={`Insert {{${v.name}}}`}
                  onClick={() => onInsert(v.name)}
                >
                  {`{{${v.name}}}`}
                </button>
                <span className="wf-var-value mono small" title={v.value}>
                  {v.value === '' ? <span className="muted">(empty)</span> : v.value}
                </span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}
