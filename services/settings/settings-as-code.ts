import { isDeepStrictEqual } from 'node:util';
import { maskActions } from '../actions/action-secrets.js';
import { apiError, type Obj, type SettingsApi } from './settings-api.js';
import { clean, current, omit, ruleKey, workflowKey, type SettingsDocument } from './settings-document.js';

/**
 * Settings as code (docs/settings-as-code.md): an account's buckets (with their consumer
 * identification sources), exclusion and redaction rules, workflows, stream views and SLOs as one
 * YAML document, exported and applied through the API's
 * own routes, run in-process (Fastify `inject`). Every write therefore passes the same schemas,
 * checks, secret sealing and change notifications as an API call, and a refusal carries the API's
 * own error message. Bucket sids are written as bucket names and the SLO of an `slo_burn` trigger
 * as the SLO's name, so a file applies to any account.
 *
 * This file plans and applies a document; the document itself (read, export) is in
 * settings-document.ts and the in-process API client in settings-api.ts.
 */

export interface PlanStep {
  op: 'create' | 'update' | 'delete';
  kind: 'bucket' | 'consumerIdentification' | 'exclusion' | 'redaction' | 'slo' | 'workflow' | 'streamView';
  /** how the plan names it: `shop`, `shop/prod01/Errors`, a rule's name or criteria */
  label: string;
  run: (sids: Map<string, string>) => Promise<void>;
}

/**
 * The steps that make the account match `want`: creates and updates in dependency order
 * (buckets, rules, workflows, stream views), then deletes. An item is matched by its name (a
 * workflow by bucket, environment and name; a content rule, which has no name, by its content)
 * and updated only when its content differs. Buckets missing from the file are left alone (a
 * deleted bucket takes its traffic along). Workflow secrets are compared masked, as the API
 * stores them out of sight: a changed secret alone is not seen as a change.
 */
export async function plan(api: SettingsApi, want: SettingsDocument): Promise<PlanStep[]> {
  const { doc: have, ids } = await current(api);
  const steps: PlanStep[] = [];
  const deletes: PlanStep[] = [];
  const base = api.base;
  const send = async (method: 'POST' | 'PUT' | 'DELETE', url: string, what: string, body?: unknown) => {
    const r = await api.call(method, url, body);
    if (r.status >= 300) throw apiError(what, r);
    return r.body;
  };
  const bucketSid = (sids: Map<string, string>, name: string) => sids.get(name) ?? name;
  const toSids = (sids: Map<string, string>, v: unknown) =>
    Array.isArray(v) ? v.map((n) => bucketSid(sids, String(n))) : v;

  const haveBuckets = new Map(have.buckets.map((b) => [b.name, b]));
  for (const b of want.buckets) {
    const old = haveBuckets.get(b.name);
    const body = { name: b.name, verifySslCerts: b.verifySslCerts };
    if (!old)
      steps.push({
        op: 'create',
        kind: 'bucket',
        label: b.name,
        run: async (sids) => {
          const made = await send('POST', `${base}/buckets`, `bucket "${b.name}"`, body);
          sids.set(b.name, String(made.sid));
        },
      });
    else if (old.verifySslCerts !== b.verifySslCerts)
      steps.push({
        op: 'update',
        kind: 'bucket',
        label: b.name,
        run: async (sids) => {
          await send('PUT', `${base}/buckets/${bucketSid(sids, b.name)}`, `bucket "${b.name}"`, body);
        },
      });
  }

  // A bucket's identification sources are one list, replaced as a whole (PUT); a bucket of the
  // file without them has none, as it has no stream view it does not list.
  for (const b of want.buckets) {
    const had = haveBuckets.get(b.name)?.consumerIdentification ?? [];
    const wanted = b.consumerIdentification ?? [];
    if (isDeepStrictEqual(had.map(sourceDefaults), wanted.map(sourceDefaults))) continue;
    const step: PlanStep = {
      op: had.length === 0 ? 'create' : wanted.length === 0 ? 'delete' : 'update',
      kind: 'consumerIdentification',
      label: b.name,
      run: async (sids) =>
        void (await send(
          'PUT',
          `${base}/buckets/${bucketSid(sids, b.name)}/consumerIdentification`,
          `consumer identification of bucket "${b.name}"`,
          { sources: wanted },
        )),
    };
    (step.op === 'delete' ? deletes : steps).push(step);
  }

  for (const kind of ['exclusions', 'redactions'] as const) {
    const one = kind === 'exclusions' ? 'exclusion' : 'redaction';
    const haveByKey = new Map(have[kind].map((r) => [ruleKey(kind, r), r]));
    const wanted = new Set<string>();
    for (const r of want[kind]) {
      const key = ruleKey(kind, r);
      wanted.add(key);
      const old = haveByKey.get(key);
      const label = typeof r.name === 'string' ? r.name : String(r.criteria ?? r.pattern ?? r.type ?? '');
      const wantDoc = clean({ ...r, buckets: Array.isArray(r.buckets) ? [...r.buckets].sort() : r.buckets });
      if (old && isDeepStrictEqual(withDefaults(old), withDefaults(wantDoc))) continue;
      const body = (sids: Map<string, string>) => ({ ...r, buckets: toSids(sids, r.buckets) });
      if (!old)
        steps.push({
          op: 'create',
          kind: one,
          label,
          run: async (sids) => void (await send('POST', `${base}/${kind}`, `${one} "${label}"`, body(sids))),
        });
      else {
        const sid = ids.rules.get(key)!;
        steps.push({
          op: 'update',
          kind: one,
          label,
          run: async (sids) =>
            void (await send('PUT', `${base}/${kind}/${sid}`, `${one} "${label}"`, {
              ...updateDefaults(r),
              ...body(sids),
            })),
        });
      }
    }
    for (const [key, r] of haveByKey)
      if (!wanted.has(key)) {
        const label = typeof r.name === 'string' ? r.name : String(r.criteria ?? r.pattern ?? r.type ?? '');
        const sid = ids.rules.get(key)!;
        deletes.push({
          op: 'delete',
          kind: one,
          label,
          run: async () => void (await send('DELETE', `${base}/${kind}/${sid}`, `${one} "${label}"`)),
        });
      }
  }

  // SLOs before workflows: an slo_burn trigger names one. Matched by name across the account.
  const sloKey = (name: string) => `slo\n${name}`;
  const haveSlos = new Map(
    have.buckets.flatMap((b) => b.slos.map((o) => [String(o.name), { bucket: b.name, slo: o }] as const)),
  );
  const wantedSlos = new Set<string>();
  for (const b of want.buckets)
    for (const o of b.slos) {
      const name = String(o.name);
      wantedSlos.add(name);
      const prev = haveSlos.get(name);
      const wantDoc = clean(o);
      if (prev && prev.bucket === b.name && isDeepStrictEqual(prev.slo, wantDoc)) continue;
      const body = (sids: Map<string, string>) => ({ ...o, bucketSid: bucketSid(sids, b.name) });
      const label = `${b.name}/${name}`;
      if (!prev)
        steps.push({
          op: 'create',
          kind: 'slo',
          label,
          run: async (sids) => {
            const made = await send('POST', `${base}/slos`, `SLO "${label}"`, body(sids));
            sids.set(sloKey(name), String(made.sid));
          },
        });
      else {
        const sid = ids.slos.get(name)!;
        steps.push({
          op: 'update',
          kind: 'slo',
          label,
          run: async (sids) => void (await send('PUT', `${base}/slos/${sid}`, `SLO "${label}"`, body(sids))),
        });
      }
    }
  const sloDeletes: PlanStep[] = [];
  const inFile = new Set(want.buckets.map((b) => b.name));
  for (const [name, prev] of haveSlos)
    if (!wantedSlos.has(name) && inFile.has(prev.bucket)) {
      const sid = ids.slos.get(name)!;
      const label = `${prev.bucket}/${name}`;
      sloDeletes.push({
        op: 'delete',
        kind: 'slo',
        label,
        run: async () => void (await send('DELETE', `${base}/slos/${sid}`, `SLO "${label}"`)),
      });
    }
  /** A workflow body for the API: an slo_burn trigger's SLO name becomes its sid. */
  const withSloSid = (sids: Map<string, string>, body: Obj): Obj => {
    const trigger = body.trigger as Obj | undefined;
    if (trigger?.type !== 'slo_burn') return body;
    const name = String(trigger.sloSid);
    return { ...body, trigger: { ...trigger, sloSid: sids.get(sloKey(name)) ?? name } };
  };

  for (const b of want.buckets) {
    const old = haveBuckets.get(b.name);
    const haveWfs = new Map((old?.workflows ?? []).map((w) => [workflowKey(b.name, w), w]));
    const wantedWfs = new Set<string>();
    for (const w of b.workflows) {
      const key = workflowKey(b.name, w);
      wantedWfs.add(key);
      const label = `${b.name}/${String(w.environment)}/${String(w.name)}`;
      const prev = haveWfs.get(key);
      const body = { isActive: true, ...omit(w, ['environment']) };
      if (
        prev &&
        isDeepStrictEqual(
          comparableWorkflow(prev),
          comparableWorkflow({ ...body, environment: w.environment }),
        )
      )
        continue;
      const path = (sids: Map<string, string>) =>
        `${base}/environments/${String(w.environment)}/buckets/${bucketSid(sids, b.name)}/workflows`;
      if (!prev)
        steps.push({
          op: 'create',
          kind: 'workflow',
          label,
          run: async (sids) =>
            void (await send('POST', path(sids), `workflow "${label}"`, withSloSid(sids, body))),
        });
      else {
        const sid = ids.workflows.get(key)!;
        steps.push({
          op: 'update',
          kind: 'workflow',
          label,
          run: async (sids) =>
            void (await send('PUT', `${path(sids)}/${sid}`, `workflow "${label}"`, withSloSid(sids, body))),
        });
      }
    }
    for (const [key, w] of haveWfs)
      if (!wantedWfs.has(key)) {
        const label = `${b.name}/${String(w.environment)}/${String(w.name)}`;
        const sid = ids.workflows.get(key)!;
        deletes.push({
          op: 'delete',
          kind: 'workflow',
          label,
          run: async (sids) =>
            void (await send(
              'DELETE',
              `${base}/environments/${String(w.environment)}/buckets/${bucketSid(sids, b.name)}/workflows/${sid}`,
              `workflow "${label}"`,
            )),
        });
      }

    const haveViews = new Map((old?.streamViews ?? []).map((v) => [String(v.name), v]));
    const wantedViews = new Set<string>();
    for (const v of b.streamViews) {
      const name = String(v.name);
      wantedViews.add(name);
      const label = `${b.name}/${name}`;
      const prev = haveViews.get(name);
      if (prev && isDeepStrictEqual(prev, { icon: 'search', ...v })) continue;
      const path = (sids: Map<string, string>) => `${base}/buckets/${bucketSid(sids, b.name)}/streamViews`;
      if (!prev)
        steps.push({
          op: 'create',
          kind: 'streamView',
          label,
          run: async (sids) => void (await send('POST', path(sids), `stream view "${label}"`, v)),
        });
      else {
        const sid = ids.views.get(`${b.name}\n${name}`)!;
        steps.push({
          op: 'update',
          kind: 'streamView',
          label,
          run: async (sids) =>
            void (await send('PUT', `${path(sids)}/${sid}`, `stream view "${label}"`, {
              icon: 'search',
              ...v,
            })),
        });
      }
    }
    for (const name of haveViews.keys())
      if (!wantedViews.has(name)) {
        const label = `${b.name}/${name}`;
        const sid = ids.views.get(`${b.name}\n${name}`)!;
        deletes.push({
          op: 'delete',
          kind: 'streamView',
          label,
          run: async (sids) =>
            void (await send(
              'DELETE',
              `${base}/buckets/${bucketSid(sids, b.name)}/streamViews/${sid}`,
              `stream view "${label}"`,
            )),
        });
      }
  }
  // SLOs go after the workflows that may name them.
  return [...steps, ...deletes, ...sloDeletes];
}

/** A rule as stored: the create defaults filled in, so an omitted default is no change. */
function withDefaults(r: Obj): Obj {
  const contentRule = typeof r.name !== 'string';
  const defaults: Obj = contentRule ? { enabled: true } : { isActive: true };
  return { ...defaults, ...r };
}

/** An identification source as stored: its type's defaults filled in, so an omitted default is no change. */
function sourceDefaults(src: Obj): Obj {
  const defaults: Obj =
    src.type === 'header'
      ? { hash: true }
      : src.type === 'query'
        ? { hash: false }
        : src.type === 'jwtClaim'
          ? { header: 'Authorization' }
          : {};
  return { ...defaults, ...src };
}

/** A PUT replaces the whole rule: it needs the active flag the file may leave to its default. */
const updateDefaults = (r: Obj): Obj => (typeof r.name === 'string' ? { isActive: true } : { enabled: true });

/** A workflow as the API shows it: secrets masked, the webhook method and action order filled in. */
function comparableWorkflow(w: Obj): Obj {
  const actions = ((w.actions as Obj[]) ?? []).map((a) => ({
    ...a,
    order: typeof a.order === 'number' ? a.order : 0,
    config: a.type === 'webhook' ? { method: 'POST', ...(a.config as Obj) } : a.config,
  }));
  return clean({
    isActive: true,
    ...w,
    actions: maskActions(actions as unknown as { type: string; config: Obj }[]),
  });
}

/** Runs the steps in order; stops at the first refusal (SettingsError with the API's message). */
export async function applyPlan(api: SettingsApi, steps: PlanStep[]): Promise<void> {
  const { ids } = await current(api);
  const sids = new Map(ids.buckets);
  for (const [name, sid] of ids.slos) sids.set(`slo\n${name}`, sid);
  for (const s of steps) await s.run(sids);
}

export const describeStep = (s: PlanStep): string => `${s.op} ${s.kind} "${s.label}"`;
