import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { buckets } from '../../api/resources';
import { fieldErrors } from '../../api/client';
import {
  sdkSettings,
  type BucketSdkSettings,
  type SdkSettingValues,
  type SdkSettingsUpdate,
} from '../../api/rules';
import { sdk as sdkApi, type SdkSettings } from '../../api/settings';
import type { Bucket } from '../../api/types';
import { ConsumerIdentificationPanel } from './consumer-identification';
import { CopyButton } from '../../components/copy-button';
import { Field, FormError } from '../../components/form';
import { ReleaseSettingsPanel } from './release-settings';
import { AppSnippets, IngestSnippet, useIngestUrl } from '../../components/ingest-snippet';
import { ErrorBox, Loading, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';
import { DataTable } from '../../components/data-table';

/** The curl of one call in the existing SDKs' wire format (`POST /` on the ingest listener). */
export function sdkCurl(ingest: string, bucketSid: string): string {
  return `curl -X POST ${ingest}/ \\
  -H "Authorization: Bearer $TAPLINE_TOKEN" -H 'Api-Traffic-Bucket-Sid: ${bucketSid}' \\
  -H 'Api-Traffic-Sdk: curl' -H 'Api-Traffic-Sdk-Version: 1.0.0' -H 'content-type: application/json' \\
  -d '{"request":{"url":"https://api.example.com/hello","method":"GET","headers":{"accept":"application/json"}},"response":{"status":200,"responseTime":12}}'`;
}

/**
 * One bucket's setup: sid, ingest URL, copy-ready snippets, whether traffic has arrived, SDK
 * settings and consumer identification.
 */
export function BucketSetupPage({ params }: { params: { bucketSid: string } }) {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const ingest = useIngestUrl();
  // Polls until the first request arrives, so "waiting" turns into "connected" without a reload.
  const bucketQuery = useQuery({
    queryKey: ['bucket', accountSid, params.bucketSid],
    queryFn: () => buckets.get(accountSid, params.bucketSid),
    refetchInterval: (query) => (query.state.data?.appIsConnected ? false : 2_000),
  });
  const back = (
    <Link href={href('/settings/buckets')} className="muted small">
      ← Buckets
    </Link>
  );
  if (bucketQuery.isPending) return <Loading />;
  if (bucketQuery.error && !bucketQuery.data)
    return (
      <div className="page">
        {back}
        <ErrorBox error={bucketQuery.error} onRetry={() => void bucketQuery.refetch()} />
      </div>
    );
  const bucket = bucketQuery.data;
  const sdk = sdkCurl(ingest, bucket.sid);
  return (
    <div className="page">
      <div>
        {back}
        <h1>{bucket.name}</h1>
      </div>
      <section className="panel" aria-label="Connection">
        <div
          className={`connection ${bucket.appIsConnected ? 'connected' : 'waiting'}`}
          role="status"
          aria-live="polite"
          data-testid="bucket-connection"
        >
          {bucket.appIsConnected ? (
            '● Connected: traffic is arriving.'
          ) : (
            <>
              <span className="spinner" aria-hidden="true" /> Waiting for the first request… (checked every 2
              seconds)
            </>
          )}
        </div>
        <dl className="facts">
          <dt>Bucket sid</dt>
          <dd>
            <code data-testid="bucket-sid">{bucket.sid}</code>{' '}
            <CopyButton text={bucket.sid} label="Copy sid" />
          </dd>
          <dt>Ingest URL</dt>
          <dd>
            <code>{`${ingest}/v1/buckets/${bucket.sid}/ingest`}</code>
            <CopyButton text={`${ingest}/v1/buckets/${bucket.sid}/ingest`} label="Copy URL" />
          </dd>
          <dt>Created</dt>
          <dd>{formatDateTime(bucket.createdAt)}</dd>
        </dl>
        {bucket.appIsConnected ? (
          <p>
            <Link href={href('/stream', { bucket: bucket.sid })}>See its requests in the stream →</Link>
          </p>
        ) : (
          <p className="hint">
            Run one of the commands below with a token holding <code>requests:write</code> (
            <Link href={href('/settings/tokens')}>create one</Link>, the “Ingest only” preset is enough). This
            page notices the first request by itself.
          </p>
        )}
      </section>
      <section className="panel">
        <h2>From your app</h2>
        <AppSnippets bucketSid={bucket.sid} />
      </section>
      <section className="panel">
        <h2>Batch ingest API</h2>
        <p className="hint">Up to 1,000 records per call, answered 202 once they are safely queued.</p>
        <IngestSnippet bucketSid={bucket.sid} />
      </section>
      <section className="panel">
        <h2>Existing SDKs' wire format</h2>
        <p className="hint">
          One captured call per <code>POST /</code> to the ingest listener, as the existing SDKs send it: the
          bucket in the <code>Api-Traffic-Bucket-Sid</code> header, the SDK's name and version in{' '}
          <code>Api-Traffic-Sdk</code> and <code>Api-Traffic-Sdk-Version</code> (kept as an <code>sdk</code>{' '}
          tag). The body is one call or an array of calls.
        </p>
        <div className="snippet">
          <pre>
            <code data-testid="sdk-curl">{sdk}</code>
          </pre>
          <CopyButton text={sdk} label="Copy SDK-format curl" />
        </div>
      </section>
      <SdkSettingsPanel bucket={bucket} />
      <ConsumerIdentificationPanel bucketSid={bucket.sid} />
      <ReleaseSettingsPanel bucket={bucket} />
    </div>
  );
}

/** The configurable SDK settings (`…/sdkSettings`), with what each does. */
const SETTINGS: {
  key: keyof SdkSettingValues;
  label: string;
  hint: string;
  kind: 'boolean' | 'integer' | 'share';
}[] = [
  {
    key: 'enabled',
    label: 'Capture traffic',
    hint: 'Off: the SDK captures and sends nothing.',
    kind: 'boolean',
  },
  {
    key: 'captureRequestBody',
    label: 'Capture request bodies',
    hint: 'Off: requests are sent without their body.',
    kind: 'boolean',
  },
  {
    key: 'captureResponseBody',
    label: 'Capture response bodies',
    hint: 'Off: responses are sent without their body.',
    kind: 'boolean',
  },
  {
    key: 'interceptOutbound',
    label: 'Capture outbound calls',
    hint: 'When on: outbound calls are captured too (the HTTP calls the app makes to other services).',
    kind: 'boolean',
  },
  {
    key: 'debug',
    label: 'SDK debug logging',
    hint: 'The SDK logs what it does, through the logger the app gives it.',
    kind: 'boolean',
  },
  {
    key: 'maxBodyBytes',
    label: 'Largest body kept (bytes)',
    hint: 'Longer bodies are cut to this many bytes; 0 sends no body. At most 1,048,576.',
    kind: 'integer',
  },
  {
    key: 'sampleRate',
    label: 'Sample rate',
    hint: 'Share of calls captured, from 0 to 1 (1 = every call, 0.1 = one in ten).',
    kind: 'share',
  },
];

/** Same bounds as the API's schema (schemas/rules.schema.ts). */
function settingError(kind: 'integer' | 'share', text: string): string | undefined {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) return 'must be a number';
  if (kind === 'integer' && (!Number.isInteger(n) || n < 0 || n > 1_048_576))
    return 'must be a whole number from 0 to 1,048,576';
  if (kind === 'share' && (n < 0 || n > 1)) return 'must be from 0 to 1';
  return undefined;
}

/** What `GET /v1/buckets/{b}/sdk` hands an SDK: the bucket's SDK settings (editable) and the rules. */
function SdkSettingsPanel({ bucket }: { bucket: Bucket }) {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const client = useQuery({
    queryKey: ['sdk', bucket.sid, 'client'],
    queryFn: () => sdkApi.settings(bucket.sid, 'client'),
  });
  const server = useQuery({
    queryKey: ['sdk', bucket.sid, 'server'],
    queryFn: () => sdkApi.settings(bucket.sid, 'server'),
  });
  const own = useQuery({
    queryKey: ['sdkSettings', accountSid, bucket.sid],
    queryFn: () => sdkSettings.get(accountSid, bucket.sid),
  });
  return (
    <section className="panel" aria-labelledby="sdk-settings-title">
      <h2 id="sdk-settings-title">SDK settings</h2>
      <p className="hint">
        What an SDK receives from <code>GET /v1/buckets/{bucket.sid}/sdk</code> (on this API or on the ingest
        URL, with its ingest token). SDKs apply these settings themselves and pick up a change at their next
        refresh.
      </p>
      <QueryView query={own}>{(s) => <SdkSettingsForm bucket={bucket} current={s} />}</QueryView>
      <QueryView query={client}>
        {(d) => (
          <>
            <h3>Redaction rules applied by the SDK</h3>
            <p className="hint">
              <code>redactAt=client</code>: the SDK removes these values before sending.{' '}
              <Link href={href('/settings/redactions')}>Manage redactions</Link>
            </p>
            <RedactionRules rules={d.redactionRules} />
            <h3>Exclusion rules</h3>
            <p className="hint">
              Matching calls may be dropped by the SDK; Tapline drops them on arrival anyway.{' '}
              <Link href={href('/settings/exclusions')}>Manage exclusions</Link>
            </p>
            <ExclusionRules rules={d.exclusionRules} />
          </>
        )}
      </QueryView>
      <h3>Redaction rules applied by Tapline</h3>
      <p className="hint">
        <code>redactAt=server</code>: listed to SDKs for information; Tapline applies them before storing.
      </p>
      <QueryView query={server}>{(d) => <RedactionRules rules={d.redactionRules} />}</QueryView>
    </section>
  );
}

function SdkSettingsForm({ bucket, current }: { bucket: Bucket; current: BucketSdkSettings }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const editable = can('buckets:write');
  const [text, setText] = useState(() => ({
    maxBodyBytes: String(current.settings.maxBodyBytes),
    sampleRate: String(current.settings.sampleRate),
  }));
  const [flags, setFlags] = useState(() => ({ ...current.settings }));
  const [tried, setTried] = useState(false);
  const save = useMutation({
    mutationFn: (body: SdkSettingsUpdate) => sdkSettings.update(accountSid, bucket.sid, body),
    onSuccess: async (updated) => {
      qc.setQueryData(['sdkSettings', accountSid, bucket.sid], updated);
      await qc.invalidateQueries({ queryKey: ['sdk', bucket.sid] });
    },
  });
  const local: Record<string, string> = {};
  for (const k of ['maxBodyBytes', 'sampleRate'] as const) {
    const e = settingError(k === 'maxBodyBytes' ? 'integer' : 'share', text[k]);
    if (e) local[k] = e;
  }
  const errors = { ...(tried ? local : {}), ...fieldErrors(save.error) };
  const body: SdkSettingsUpdate = {
    ...flags,
    maxBodyBytes: Number(text.maxBodyBytes),
    sampleRate: Number(text.sampleRate),
  };
  const dirty = SETTINGS.some((s) => body[s.key] !== current.settings[s.key]);
  return (
    <form
      className="stack sdk-settings"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        setTried(true);
        save.reset();
        if (Object.keys(local).length === 0) save.mutate(body);
      }}
    >
      <fieldset className="plain" disabled={!editable || save.isPending}>
        <legend className="sr-only">Settings served to SDKs</legend>
        <div className="settings-grid">
          {SETTINGS.filter((s) => s.kind === 'boolean').map((s) => (
            <div className="setting" key={s.key}>
              <label className="check">
                <input
                  type="checkbox"
                  checked={flags[s.key] as boolean}
                  aria-describedby={`sdk-${s.key}-hint`}
                  onChange={(e) => {
                    save.reset();
                    setFlags((f) => ({ ...f, [s.key]: e.target.checked }));
                  }}
                />
                <span>{s.label}</span>
                {current.settings[s.key] !== current.defaults[s.key] ? (
                  <span className="badge badge-pending">changed</span>
                ) : null}
              </label>
              <div id={`sdk-${s.key}-hint`} className="hint">
                <code>{s.key}</code> — {s.hint}
              </div>
            </div>
          ))}
        </div>
        <div className="settings-grid">
          {SETTINGS.filter((s) => s.kind !== 'boolean').map((s) => (
            <Field
              key={s.key}
              id={`sdk-${s.key}`}
              label={s.label}
              inputMode="decimal"
              value={text[s.key as 'maxBodyBytes' | 'sampleRate']}
              error={errors[s.key]}
              hint={
                <>
                  <code>{s.key}</code> — {s.hint} Default {String(current.defaults[s.key])}
                  {current.settings[s.key] !== current.defaults[s.key] ? '; changed' : ''}.
                </>
              }
              onChange={(e) => {
                save.reset();
                setText((t) => ({ ...t, [s.key]: e.target.value }));
              }}
            />
          ))}
        </div>
      </fieldset>
      <FormError error={save.error} />
      {editable ? (
        <div className="actions">
          {save.isSuccess && !dirty ? (
            <span className="hint ok-text" role="status">
              Saved. SDKs receive the new settings at their next refresh.
            </span>
          ) : null}
          <button type="submit" className="btn btn-primary" disabled={save.isPending || !dirty}>
            {save.isPending ? 'Saving…' : 'Save SDK settings'}
          </button>
        </div>
      ) : (
        <p className="hint">Your role cannot change these settings.</p>
      )}
      {current.updatedAt ? (
        <p className="muted small">Last changed {formatDateTime(current.updatedAt)}.</p>
      ) : (
        <p className="muted small">All defaults: never changed.</p>
      )}
    </form>
  );
}

function RedactionRules({ rules }: { rules: SdkSettings['redactionRules'] }) {
  if (rules.length === 0) return <p className="muted small">None.</p>;
  return (
    <DataTable columns={['Field', 'Action', 'Environments']}>
      {rules.map((r) => (
        <tr key={r.sid}>
          <td className="mono">{r.field}</td>
          <td>
            {r.action}
            {r.replacement !== undefined ? (
              <span className="muted">
                {' '}
                with <code>{r.replacement}</code>
              </span>
            ) : null}
          </td>
          <td className="small">{r.environments ? r.environments.join(', ') : 'all'}</td>
        </tr>
      ))}
    </DataTable>
  );
}

function ExclusionRules({ rules }: { rules: SdkSettings['exclusionRules'] }) {
  if (rules.length === 0) return <p className="muted small">None: all traffic is kept.</p>;
  return (
    <DataTable columns={['Path', 'Method', 'Status', 'Environments']}>
      {rules.map((r) => (
        <tr key={r.sid}>
          <td className="mono">{r.path}</td>
          <td>{r.method}</td>
          <td>{r.statusCode ?? 'any'}</td>
          <td className="small">{r.environments ? r.environments.join(', ') : 'all'}</td>
        </tr>
      ))}
    </DataTable>
  );
}
