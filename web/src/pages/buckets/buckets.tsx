import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import { fieldErrors } from '../../api/client';
import { buckets } from '../../api/resources';
import type { Bucket } from '../../api/types';
import { Dialog, RemoveDialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import { Empty, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';
import { bucketsQuery, useBuckets } from '../../api/queries';
import { DataTable } from '../../components/data-table';

/**
 * The account's buckets: create, rename, delete (typing the name), each with its setup page. A
 * rename or a deletion is confirmed by a notice above the list, as on the rule pages.
 */
export function BucketsPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const href = useSharedHref();
  const qc = useQueryClient();
  const list = useBuckets();
  const [name, setName] = useState('');
  const [renaming, setRenaming] = useState<Bucket | null>(null);
  const [deleting, setDeleting] = useState<Bucket | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: bucketsQuery(accountSid).queryKey });
  const create = useMutation({
    mutationFn: () => buckets.create(accountSid, { name }),
    onSuccess: async () => {
      setName('');
      setNotice(null);
      await refresh();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <div className="page">
      <h1>Buckets</h1>
      {notice ? (
        <div className="notice ok-text" role="status">
          {notice}
        </div>
      ) : null}
      {can('buckets:write') ? (
        <section className="panel">
          <h2>New bucket</h2>
          <form className="inline-form" onSubmit={submit}>
            <Field
              id="bucket-name"
              label="Name"
              required
              maxLength={200}
              placeholder="e.g. Checkout API"
              value={name}
              error={fieldErrors(create.error).name}
              onChange={(e) => setName(e.target.value)}
            />
            <button type="submit" className="btn btn-primary" disabled={create.isPending || !name.trim()}>
              Create bucket
            </button>
          </form>
          <FormError error={create.error} shownAt={['name']} />
          {create.data ? (
            <p className="hint" role="status">
              Created “{create.data.name}”.{' '}
              <Link href={href(`/settings/buckets/${create.data.sid}`)}>Set it up →</Link>
            </p>
          ) : null}
        </section>
      ) : null}
      <section className="panel">
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No bucket yet">
              A bucket holds the traffic of one API or service: create one above.
            </Empty>
          }
        >
          {(d) => (
            <DataTable columns={['Name', 'Sid', 'Traffic', 'Created', '']}>
              {d.records.map((b) => (
                <tr key={b.sid}>
                  <td>
                    <Link href={href(`/settings/buckets/${b.sid}`)}>{b.name}</Link>
                  </td>
                  <td className="mono small">{b.sid}</td>
                  <td>
                    <span className={`badge ${b.appIsConnected ? 'badge-ok' : 'badge-pending'}`}>
                      {b.appIsConnected ? 'connected' : 'waiting'}
                    </span>
                  </td>
                  <td className="small">{formatDateTime(b.createdAt)}</td>
                  <td>
                    <div className="row-actions">
                      {can('buckets:write') ? (
                        <button type="button" className="btn btn-small" onClick={() => setRenaming(b)}>
                          Rename
                        </button>
                      ) : null}
                      {can('buckets:delete') ? (
                        <button
                          type="button"
                          className="btn btn-small btn-danger-ghost"
                          onClick={() => setDeleting(b)}
                        >
                          Delete
                        </button>
                      ) : null}
                    </div>
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </QueryView>
      </section>
      {renaming ? (
        <RenameBucket
          bucket={renaming}
          onClose={() => setRenaming(null)}
          onDone={async (saved) => {
            create.reset();
            setNotice(
              saved.name === renaming.name
                ? `“${saved.name}” is saved.`
                : `“${renaming.name}” is renamed to “${saved.name}”.`,
            );
            await refresh();
          }}
        />
      ) : null}
      {deleting ? (
        <DeleteBucket
          bucket={deleting}
          onClose={() => setDeleting(null)}
          onDone={async () => {
            create.reset();
            setNotice(`“${deleting.name}” is deleted, with its stored requests.`);
            await refresh();
          }}
        />
      ) : null}
    </div>
  );
}

function RenameBucket({
  bucket,
  onClose,
  onDone,
}: {
  bucket: Bucket;
  onClose: () => void;
  onDone: (saved: Bucket) => Promise<unknown>;
}) {
  const accountSid = useAccountSid();
  const [name, setName] = useState(bucket.name);
  const save = useMutation({
    mutationFn: () => buckets.update(accountSid, bucket.sid, { name, verifySslCerts: bucket.verifySslCerts }),
    onSuccess: async (saved) => {
      await onDone(saved);
      onClose();
    },
  });
  return (
    <Dialog title="Rename bucket" onClose={onClose}>
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        <Field
          id="rename-bucket"
          label="Name"
          required
          maxLength={200}
          value={name}
          error={fieldErrors(save.error).name}
          onChange={(e) => setName(e.target.value)}
        />
        <FormError error={save.error} shownAt={['name']} />
        <div className="actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={save.isPending || !name.trim()}>
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteBucket({
  bucket,
  onClose,
  onDone,
}: {
  bucket: Bucket;
  onClose: () => void;
  onDone: () => Promise<unknown>;
}) {
  const accountSid = useAccountSid();
  const [typed, setTyped] = useState('');
  return (
    <RemoveDialog
      title={`Delete “${bucket.name}”?`}
      confirmLabel="Delete bucket"
      remove={() => buckets.remove(accountSid, bucket.sid)}
      onDone={onDone}
      onClose={onClose}
      blocked={typed !== bucket.name}
    >
      <p>Deleting the bucket removes, at once and for good:</p>
      <ul className="delete-list">
        <li>its stored requests and the metrics computed from them (throughput, response times, errors),</li>
        <li>its workflows and their execution history,</li>
        <li>its saved stream views and the notes on its requests.</li>
      </ul>
      <p>
        Ingest with its sid <code>{bucket.sid}</code> is refused from then on. Event markers and MCP tokens
        that name it stay but no longer match any traffic. This cannot be undone.
      </p>
      <Field
        id="confirm-bucket-name"
        label={`Type the bucket's name (${bucket.name}) to confirm`}
        autoComplete="off"
        value={typed}
        onChange={(e) => setTyped(e.target.value)}
      />
    </RemoveDialog>
  );
}
