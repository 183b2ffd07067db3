import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { fieldErrors } from '../../api/client';
import { releaseSettings, type ReleaseSettings, type ReleaseSettingsUpdate } from '../../api/slos';
import type { Bucket } from '../../api/types';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';
import { Field, FormError } from '../../components/form';
import { QueryView } from '../../components/state';

type WindowKey = keyof ReleaseSettingsUpdate;

/** What a bucket uses until its windows are set (the API's defaults, docs/releases.md). */
const DEFAULTS: ReleaseSettingsUpdate = { beforeMinutes: 30, afterMinutes: 30, settleMinutes: 2 };

/** The three lengths, with what each does and the API's bounds (schemas/slo.schema.ts). */
const WINDOWS: { key: WindowKey; label: string; hint: string }[] = [
  {
    key: 'beforeMinutes',
    label: 'Minutes before',
    hint: 'The traffic of this many minutes before the marker is the baseline. 5 to 1,440.',
  },
  {
    key: 'afterMinutes',
    label: 'Minutes after',
    hint: 'The traffic of this many minutes after the settling period is judged against it. 5 to 1,440.',
  },
  {
    key: 'settleMinutes',
    label: 'Settling minutes',
    hint: 'Skipped right after the marker (restarts, warm-up, cache fills). 0 to 120.',
  },
];

const asText = (s: ReleaseSettingsUpdate) => ({
  beforeMinutes: String(s.beforeMinutes),
  afterMinutes: String(s.afterMinutes),
  settleMinutes: String(s.settleMinutes),
});

/**
 * The bucket's release impact windows (`…/buckets/{b}/releaseSettings`): how long the windows
 * before and after a deployment marker are, and how many minutes after it are left out.
 */
export function ReleaseSettingsPanel({ bucket }: { bucket: Bucket }) {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const settings = useQuery({
    queryKey: ['releaseSettings', accountSid, bucket.sid],
    queryFn: () => releaseSettings.get(accountSid, bucket.sid),
  });
  return (
    <section className="panel" aria-labelledby="release-settings-title">
      <h2 id="release-settings-title">Release impact windows</h2>
      <p className="hint">
        A deployment marker on this bucket is judged by comparing its traffic before the marker with its
        traffic after it (<Link href={href('/releases')}>Releases</Link>). When a marker covers several
        buckets, each length is the largest among them.
      </p>
      <QueryView query={settings}>{(s) => <ReleaseSettingsForm bucket={bucket} current={s} />}</QueryView>
    </section>
  );
}

function ReleaseSettingsForm({ bucket, current }: { bucket: Bucket; current: ReleaseSettings }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const editable = can('buckets:write');
  const [text, setText] = useState(() => asText(current));
  const [tried, setTried] = useState(false);
  const save = useMutation({
    mutationFn: (body: ReleaseSettingsUpdate) => releaseSettings.update(accountSid, bucket.sid, body),
    onSuccess: (updated) => {
      qc.setQueryData(['releaseSettings', accountSid, bucket.sid], updated);
      setText(asText(updated));
    },
  });
  // Only "is it a whole number" is checked here; the ranges are the API's to refuse, beside the field.
  const local: Partial<Record<WindowKey, string>> = {};
  for (const w of WINDOWS) if (!/^\s*\d+\s*$/.test(text[w.key])) local[w.key] = 'must be a whole number';
  const errors: Partial<Record<string, string>> = { ...(tried ? local : {}), ...fieldErrors(save.error) };
  const body: ReleaseSettingsUpdate = {
    beforeMinutes: Number(text.beforeMinutes),
    afterMinutes: Number(text.afterMinutes),
    settleMinutes: Number(text.settleMinutes),
  };
  const dirty = WINDOWS.some((w) => body[w.key] !== current[w.key]);
  const isDefault = WINDOWS.every((w) => current[w.key] === DEFAULTS[w.key]);
  return (
    <form
      className="stack release-settings"
      noValidate
      aria-label="Release impact windows"
      onSubmit={(e) => {
        e.preventDefault();
        setTried(true);
        save.reset();
        if (Object.keys(local).length === 0) save.mutate(body);
      }}
    >
      <fieldset className="plain" disabled={!editable || save.isPending}>
        <legend className="sr-only">Window lengths in minutes</legend>
        <div className="form-row">
          {WINDOWS.map((w) => (
            <Field
              key={w.key}
              id={`release-${w.key}`}
              label={w.label}
              inputMode="numeric"
              value={text[w.key]}
              error={errors[w.key]}
              hint={
                <>
                  {w.hint} Default {DEFAULTS[w.key]}.
                </>
              }
              onChange={(e) => {
                save.reset();
                setText((t) => ({ ...t, [w.key]: e.target.value }));
              }}
            />
          ))}
        </div>
      </fieldset>
      <FormError error={save.error} shownAt={WINDOWS.map((w) => w.key)} />
      {editable ? (
        <div className="actions">
          {save.isSuccess && !dirty ? (
            <span className="hint ok-text" role="status">
              Saved. The next analysis of a marker on this bucket uses these windows.
            </span>
          ) : null}
          <button
            type="button"
            className="btn"
            disabled={save.isPending || WINDOWS.every((w) => text[w.key] === String(DEFAULTS[w.key]))}
            onClick={() => {
              save.reset();
              setText(asText(DEFAULTS));
            }}
          >
            Use the defaults
          </button>
          <button type="submit" className="btn btn-primary" disabled={save.isPending || !dirty}>
            {save.isPending ? 'Saving…' : 'Save windows'}
          </button>
        </div>
      ) : (
        <p className="hint">Your role cannot change these settings.</p>
      )}
      {current.updatedAt ? (
        <p className="muted small" data-testid="release-settings-state">
          Last changed {formatDateTime(current.updatedAt)}
          {isDefault ? ' (the same as the defaults)' : ''}.
        </p>
      ) : (
        <p className="muted small" data-testid="release-settings-state">
          Defaults (30, 30 and 2 minutes): never changed.
        </p>
      )}
    </form>
  );
}
