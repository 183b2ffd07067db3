import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { streamViews } from '../../api/resources';
import type { StreamView } from '../../api/types';
import { Dialog, RemoveDialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import { useAccountSid, useSession } from '../../lib/session';

type ViewDialog =
  { kind: 'save' } | { kind: 'rename'; view: StreamView } | { kind: 'delete'; view: StreamView };

/** The bucket's saved views: pick one, save the current search as one, rename or delete it. */
export function SavedViews({
  bucket,
  q,
  viewSid,
  onPick,
}: {
  bucket: string;
  q: string;
  viewSid: string | null;
  onPick: (v: StreamView | null) => void;
}) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const key = ['streamViews', accountSid, bucket];
  const views = useQuery({ queryKey: key, queryFn: () => streamViews.list(accountSid, bucket) });
  const [dialog, setDialog] = useState<ViewDialog | null>(null);
  const current = views.data?.records.find((v) => v.sid === viewSid);
  const close = () => setDialog(null);
  const done = () => {
    void qc.invalidateQueries({ queryKey: key });
    close();
  };

  return (
    <div className="toolbar stream-views">
      <label htmlFor="stream-view">Saved view</label>
      <select
        id="stream-view"
        value={current?.sid ?? ''}
        onChange={(e) => onPick(views.data?.records.find((v) => v.sid === e.target.value) ?? null)}
        disabled={!views.data}
      >
        <option value="">{views.data?.records.length ? 'None' : 'No saved views'}</option>
        {views.data?.records.map((v) => (
          <option key={v.sid} value={v.sid}>
            {v.name}
          </option>
        ))}
      </select>
      {views.error ? <span className="field-error">{(views.error as Error).message}</span> : null}
      {can('streamViews:write') ? (
        <button
          type="button"
          className="btn btn-small"
          onClick={() => setDialog({ kind: 'save' })}
          disabled={!q}
        >
          Save search as view
        </button>
      ) : null}
      {current && can('streamViews:write') ? (
        <button
          type="button"
          className="btn btn-small"
          onClick={() => setDialog({ kind: 'rename', view: current })}
        >
          Rename view
        </button>
      ) : null}
      {current && can('streamViews:delete') ? (
        <button
          type="button"
          className="btn btn-small btn-danger-ghost"
          onClick={() => setDialog({ kind: 'delete', view: current })}
        >
          Delete view
        </button>
      ) : null}
      {dialog?.kind === 'save' ? (
        <NameDialog
          title="Save search as view"
          initial=""
          hint={
            <>
              Criteria: <code>{q}</code>
            </>
          }
          save={(name) => streamViews.create(accountSid, bucket, { name, criteria: q })}
          onClose={close}
          onSaved={(v) => {
            done();
            onPick(v);
          }}
        />
      ) : null}
      {dialog?.kind === 'rename' ? (
        <NameDialog
          title="Rename view"
          initial={dialog.view.name}
          save={(name) => streamViews.update(accountSid, bucket, dialog.view.sid, { name })}
          onClose={close}
          onSaved={done}
        />
      ) : null}
      {dialog?.kind === 'delete' ? (
        <DeleteViewDialog
          view={dialog.view}
          bucket={bucket}
          onClose={close}
          onDeleted={() => {
            done();
            onPick(null);
          }}
        />
      ) : null}
    </div>
  );
}

function NameDialog({
  title,
  initial,
  hint,
  save,
  onClose,
  onSaved,
}: {
  title: string;
  initial: string;
  hint?: ReactNode;
  save: (name: string) => Promise<StreamView>;
  onClose: () => void;
  onSaved: (v: StreamView) => void;
}) {
  const [name, setName] = useState(initial);
  const saving = useMutation({ mutationFn: save, onSuccess: onSaved });
  return (
    <Dialog title={title} onClose={onClose}>
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          saving.mutate(name.trim());
        }}
      >
        <Field
          id="view-name"
          label="Name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          required
          maxLength={200}
          autoFocus
          hint={hint}
        />
        <FormError error={saving.error} />
        <div className="actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={saving.isPending || !name.trim()}>
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteViewDialog({
  view,
  bucket,
  onClose,
  onDeleted,
}: {
  view: StreamView;
  bucket: string;
  onClose: () => void;
  onDeleted: () => void;
}) {
  const accountSid = useAccountSid();
  return (
    <RemoveDialog
      title="Delete view"
      confirmLabel="Delete view"
      remove={() => streamViews.remove(accountSid, bucket, view.sid)}
      onDone={onDeleted}
      onClose={onClose}
    >
      <p>
        Deletes the saved view <strong>{view.name}</strong>. The requests it matches stay.
      </p>
    </RemoveDialog>
  );
}
