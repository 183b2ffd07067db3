import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { fieldErrors } from '../api/client';
import { events } from '../api/resources';
import type { EventMarker } from '../api/types';
import { useAccountSid } from '../lib/session';
import { toLocalInput } from '../lib/time';
import { Dialog } from './dialog';
import { Field, FormError } from './form';

export const EVENT_TYPES = ['deployment', 'incident', 'config_change', 'scale', 'custom'] as const;

/**
 * Creates an event marker (at the time picked on a chart) or edits one. Scope: the bucket on
 * screen, or every bucket.
 */
export function EventDialog({
  at,
  bucketSid,
  existing,
  onClose,
}: {
  at?: Date;
  bucketSid?: string | null;
  existing?: EventMarker;
  onClose: () => void;
}) {
  const accountSid = useAccountSid();
  const qc = useQueryClient();
  const [form, setForm] = useState({
    type: existing?.type ?? 'deployment',
    name: existing?.name ?? '',
    description: existing?.description ?? '',
    startedAt: toLocalInput(existing ? new Date(existing.startedAt) : (at ?? new Date())),
    endedAt: existing?.endedAt ? toLocalInput(new Date(existing.endedAt)) : '',
    allBuckets: existing ? existing.bucketSids.includes('*') : !bucketSid,
  });
  const save = useMutation({
    mutationFn: async () => {
      const body = {
        type: form.type as (typeof EVENT_TYPES)[number],
        name: form.name,
        description: form.description || null,
        startedAt: new Date(form.startedAt).toISOString(),
        endedAt: form.endedAt ? new Date(form.endedAt).toISOString() : null,
        bucketSids: form.allBuckets || !bucketSid ? ['*'] : existing ? existing.bucketSids : [bucketSid],
      };
      return existing
        ? events.update(accountSid, existing.sid, body)
        : events.create(accountSid, { ...body, source: 'dashboard' });
    },
    onSuccess: async () => {
      await qc.invalidateQueries();
      onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Dialog title={existing ? 'Edit event marker' : 'Add an event marker'} onClose={onClose}>
      <form onSubmit={submit} className="stack">
        <div className="field">
          <label htmlFor="event-type">Type</label>
          <select
            id="event-type"
            value={form.type}
            onChange={(e) => setForm((f) => ({ ...f, type: e.target.value }))}
          >
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t.replace('_', ' ')}
              </option>
            ))}
          </select>
        </div>
        <Field
          id="event-name"
          label="Title"
          required
          maxLength={200}
          placeholder="e.g. Deploy v2.14.0"
          value={form.name}
          error={errs.name}
          onChange={(e) => setForm((f) => ({ ...f, name: e.target.value }))}
        />
        <Field
          id="event-description"
          label="Description (optional)"
          value={form.description}
          error={errs.description}
          onChange={(e) => setForm((f) => ({ ...f, description: e.target.value }))}
        />
        <div className="grid-2">
          <Field
            id="event-start"
            label="Starts"
            type="datetime-local"
            required
            value={form.startedAt}
            error={errs.startedAt}
            onChange={(e) => setForm((f) => ({ ...f, startedAt: e.target.value }))}
          />
          <Field
            id="event-end"
            label="Ends (optional)"
            type="datetime-local"
            value={form.endedAt}
            error={errs.endedAt}
            onChange={(e) => setForm((f) => ({ ...f, endedAt: e.target.value }))}
          />
        </div>
        {bucketSid ? (
          <label className="check">
            <input
              type="checkbox"
              checked={form.allBuckets}
              onChange={(e) => setForm((f) => ({ ...f, allBuckets: e.target.checked }))}
            />
            Show on every bucket's charts (otherwise only this bucket)
          </label>
        ) : null}
        <FormError error={save.error} shownAt={['name', 'description', 'startedAt', 'endedAt']} />
        <div className="actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={save.isPending}>
            {save.isPending ? 'Saving…' : existing ? 'Save' : 'Add marker'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
