import { isDeepStrictEqual } from 'node:util';
import { createClient } from '@clickhouse/client';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { parse, stringify } from 'yaml';
import { ALL_SCOPES, SESSION_ONLY_SCOPES } from '../../schemas/scopes.js';
import { maskActions } from '../actions/action-secrets.js';
import { ApiTokensRepository } from '../api/tokens/api-tokens.repository.js';
import { buildApp } from '../api/app.js';
import { createClickHouse } from '../shared/clickhouse.js';
import type { Config } from '../shared/config.js';
import { CredentialStore } from '../shared/credentials.js';
import type { Logger } from '../shared/logger.js';

/**
 * Settings as code (docs/settings-as-code.md): an account's buckets (with their consumer
 * identification sources), exclusion and redaction rules, workflows, stream views and SLOs as one
 * YAML document, exported and applied through the API's
 * own routes, run in-process (Fastify `inject`). Every write therefore passes the same schemas,
 * checks, secret sealing and change notifications as an API call, and a refusal carries the API's
 * own error message. Bucket sids are written as bucket names and the SLO of an `slo_burn` trigger
 * as the SLO's name, so a file applies to any account.
 */

type Obj = Record<string, unknown>;

export interface SettingsDocument {
  version: 1;
  account: string;
  buckets: BucketDoc[];
  exclusions: Obj[];
  redactions: Obj[];
}

interface BucketDoc {
  name: string;
  verifySslCerts: boolean;
  /** its consumer identification sources, in the order they are tried; written when not empty */
  consumerIdentification?: Obj[];
  workflows: Obj[];
  streamViews: Obj[];
  slos: Obj[];
}

/** A refusal of the file or of the API, printed as is by the admin command. */
export class SettingsError extends Error {}

interface Answer {
  status: number;
  body: Obj;
}

/** The API of one account, called in-process with a temporary all-scope API token. */
export class SettingsApi {
  private constructor(
    private readonly app: FastifyInstance,
    private readonly token: string,
    private readonly tokenSid: string,
    private readonly pool: pg.Pool,
    readonly accountSid: string,
  ) {}

  static async open(pool: pg.Pool, cfg: Config, log: Logger, accountSid: string): Promise<SettingsApi> {
    const acct = await pool.query('SELECT 1 FROM accounts WHERE sid = $1', [accountSid]);
    if (!acct.rowCount) throw new SettingsError(`no account ${accountSid}`);
    // The settings routes never read ClickHouse (buckets are never deleted here): with an embedded
    // chDB, which only the service's process may open, the client is one that is never connected.
    const ch = cfg.clickhouse.url
      ? createClickHouse(cfg.clickhouse)
      : createClient({ url: 'http://clickhouse.invalid' });
    const app = await buildApp({
      cfg,
      log,
      pg: pool,
      ch,
      credentials: new CredentialStore(pool, log, 30_000, 0, cfg.limits.authLookupsPerSecond),
      ready: async () => ({}),
    });
    const scopes = ALL_SCOPES.filter((s) => !(SESSION_ONLY_SCOPES as readonly string[]).includes(s));
    const token = await new ApiTokensRepository(pool).create(accountSid, {
      name: 'settings as code (admin)',
      description: 'temporary token of npm run admin -- export/apply; deleted when the command ends',
      scopes: [...scopes],
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    return new SettingsApi(app, token.token!, token.sid, pool, accountSid);
  }

  async close(): Promise<void> {
    await this.pool.query('DELETE FROM api_tokens WHERE sid = $1', [this.tokenSid]);
    await this.app.close();
  }

  async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown): Promise<Answer> {
    const res = await this.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${this.token}` },
      ...(body === undefined ? {} : { payload: body as Obj }),
    });
    return { status: res.statusCode, body: res.body ? (JSON.parse(res.body) as Obj) : {} };
  }

  /** Every record of a list endpoint (all pages). */
  async list(path: string): Promise<Obj[]> {
    const out: Obj[] = [];
    for (let page = 1; ; page++) {
      const sep = path.includes('?') ? '&' : '?';
      const r = await this.call('GET', `${path}${sep}limit=100&page=${page}`);
      if (r.status !== 200) throw apiError(`GET ${path}`, r);
      out.push(...((r.body.records as Obj[]) ?? []));
      if (!r.body.hasMore) return out;
    }
  }

  get base(): string {
    return `/v1/accounts/${this.accountSid}`;
  }
}

function apiError(what: string, r: Answer): SettingsError {
  const e = (r.body.error ?? {}) as { code?: string; message?: string; details?: Obj };
  const details = Object.entries(e.details ?? {})
    .map(([k, v]) => `\n  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('');
  return new SettingsError(`${what}: ${r.status} ${e.code ?? ''}: ${e.message ?? 'refused'}${details}`);
}

const omit = (o: Obj, keys: readonly string[]): Obj =>
  Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));

const SYSTEM_FIELDS = ['sid', 'accountSid', 'bucketSid', 'createdAt', 'updatedAt', 'deletedAt'] as const;

/** The account's settings as the API shows them, in document form (bucket names, no ids or times). */
async function current(api: SettingsApi): Promise<{ doc: SettingsDocument; ids: Ids }> {
  const buckets = await api.list(`${api.base}/buckets`);
  const nameOf = new Map(buckets.map((b) => [String(b.sid), String(b.name)]));
  const ids: Ids = {
    buckets: new Map(),
    rules: new Map(),
    workflows: new Map(),
    views: new Map(),
    slos: new Map(),
  };
  const slos = await api.list(`${api.base}/slos`);
  const sloName = new Map(slos.map((o) => [String(o.sid), String(o.name)]));
  const toNames = (v: unknown) =>
    Array.isArray(v) ? v.map((s) => nameOf.get(String(s)) ?? String(s)).sort() : v;
  const rules = async (kind: 'exclusions' | 'redactions') =>
    (await api.list(`${api.base}/${kind}`)).map((r) => {
      const doc = clean({ ...omit(r, SYSTEM_FIELDS), buckets: toNames(r.buckets) });
      ids.rules.set(ruleKey(kind, doc), String(r.sid));
      return doc;
    });
  const workflows = await api.list(`${api.base}/workflows`);
  const docBuckets: BucketDoc[] = [];
  for (const b of buckets) {
    const name = String(b.name);
    ids.buckets.set(name, String(b.sid));
    const views = (await api.list(`${api.base}/buckets/${String(b.sid)}/streamViews`)).map((v) => {
      ids.views.set(`${name}\n${String(v.name)}`, String(v.sid));
      return clean(omit(v, SYSTEM_FIELDS));
    });
    const wfs = workflows
      .filter((w) => w.bucketSid === b.sid)
      .map((w) => {
        const trigger = w.trigger as Obj;
        const doc = clean({
          environment: w.environmentSid,
          ...omit(w, [...SYSTEM_FIELDS, 'environmentSid']),
          // An slo_burn trigger names its SLO by name, as buckets are named.
          ...(trigger.type === 'slo_burn'
            ? { trigger: { ...trigger, sloSid: sloName.get(String(trigger.sloSid)) ?? trigger.sloSid } }
            : {}),
        });
        ids.workflows.set(workflowKey(name, doc), String(w.sid));
        return doc;
      });
    const bucketSlos = slos
      .filter((o) => o.bucketSid === b.sid)
      .map((o) => {
        ids.slos.set(String(o.name), String(o.sid));
        return clean(omit(o, SYSTEM_FIELDS));
      });
    const identification = await api.call(
      'GET',
      `${api.base}/buckets/${String(b.sid)}/consumerIdentification`,
    );
    if (identification.status !== 200)
      throw apiError(`consumer identification of bucket "${name}"`, identification);
    const sources = (identification.body.sources as Obj[] | undefined) ?? [];
    docBuckets.push({
      name,
      verifySslCerts: b.verifySslCerts === true,
      ...(sources.length ? { consumerIdentification: sources } : {}),
      workflows: sortBy(wfs, (w) => workflowKey('', w)),
      streamViews: sortBy(views, (v) => String(v.name)),
      slos: sortBy(bucketSlos, (o) => String(o.name)),
    });
  }
  return {
    doc: {
      version: 1,
      account: api.accountSid,
      buckets: sortBy(docBuckets, (b) => b.name),
      exclusions: sortBy(await rules('exclusions'), (r) => ruleKey('exclusions', r)),
      redactions: sortBy(await rules('redactions'), (r) => ruleKey('redactions', r)),
    },
    ids,
  };
}

interface Ids {
  buckets: Map<string, string>;
  rules: Map<string, string>;
  workflows: Map<string, string>;
  views: Map<string, string>;
  /** SLO name -> sid */
  slos: Map<string, string>;
}

/** Null, empty-string descriptions and `[]`/null scopes are the API's defaults: left out. */
function clean(o: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === null || v === undefined) continue;
    if (Array.isArray(v) && v.length === 0 && (k === 'buckets' || k === 'environments')) continue;
    if (k === 'description' && v === '') continue;
    out[k] = v;
  }
  return out;
}

const sortBy = <T>(list: T[], key: (x: T) => string): T[] =>
  [...list].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

/** A named rule (path or field) by name; a content rule, which has none, by its whole content. */
function ruleKey(kind: string, r: Obj): string {
  return typeof r.name === 'string' ? `${kind}\nname\n${r.name}` : `${kind}\ncontent\n${stableJson(r)}`;
}

const workflowKey = (bucket: string, w: Obj) => `${bucket}\n${String(w.environment)}\n${String(w.name)}`;

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Obj)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

// ---------------------------------------------------------------- export

/**
 * The account's settings as YAML. Secrets (masked by the API: hook URLs with tokens, header
 * values, PagerDuty and Opsgenie keys, credential-named body values) are written as `${NAME}`
 * references; `secrets` lists those names for the person to set before an apply.
 */
export async function exportSettings(api: SettingsApi): Promise<{ yaml: string; secrets: string[] }> {
  const { doc } = await current(api);
  const secrets: string[] = [];
  for (const b of doc.buckets)
    for (const w of b.workflows) {
      const actions = (w.actions as Obj[]) ?? [];
      w.actions = actions.map((a, i) => ({
        ...a,
        config: replaceMasked(a.config, envName(b.name, String(w.name), i), secrets),
      }));
    }
  return { yaml: stringify(doc, { lineWidth: 0 }), secrets };
}

const MASK = '****';

/** Each string holding a mask becomes `${NAME_PATH}`; the names are collected in `out`. */
function replaceMasked(v: unknown, prefix: string, out: string[], path: string[] = []): unknown {
  if (typeof v === 'string') {
    if (!v.includes(MASK)) return v;
    const name = [prefix, ...path]
      .join('_')
      .toUpperCase()
      .replace(/[^A-Z0-9_]/g, '_');
    out.push(name);
    return `\${${name}}`;
  }
  if (Array.isArray(v)) return v.map((x, i) => replaceMasked(x, prefix, out, [...path, String(i)]));
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v as Obj).map(([k, x]) => [k, replaceMasked(x, prefix, out, [...path, k])]),
    );
  return v;
}

const envName = (bucket: string, workflow: string, index: number) =>
  `TAPLINE_${bucket}_${workflow}_${index}`.replace(/_+/g, '_');

// ---------------------------------------------------------------- apply

export interface PlanStep {
  op: 'create' | 'update' | 'delete';
  kind: 'bucket' | 'consumerIdentification' | 'exclusion' | 'redaction' | 'slo' | 'workflow' | 'streamView';
  /** how the plan names it: `shop`, `shop/prod01/Errors`, a rule's name or criteria */
  label: string;
  run: (sids: Map<string, string>) => Promise<void>;
}

/** Reads and checks the file's shape, then fills every `${NAME}` from `env`. */
export function readDocument(text: string, env: (name: string) => string | undefined): SettingsDocument {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (err) {
    throw new SettingsError(`the file is not valid YAML: ${(err as Error).message}`);
  }
  const d = (raw ?? {}) as Obj;
  if (d.version !== 1) throw new SettingsError('version: must be 1');
  const list = (v: unknown, what: string): Obj[] => {
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || v.some((x) => x === null || typeof x !== 'object' || Array.isArray(x)))
      throw new SettingsError(`${what}: must be a list of objects`);
    return v as Obj[];
  };
  const buckets = list(d.buckets, 'buckets').map((b, i): BucketDoc => {
    if (typeof b.name !== 'string' || b.name === '')
      throw new SettingsError(`buckets.${i}.name: is required`);
    const sources = list(b.consumerIdentification, `buckets.${i}.consumerIdentification`);
    return {
      name: b.name,
      verifySslCerts: b.verifySslCerts !== false,
      ...(sources.length ? { consumerIdentification: sources } : {}),
      workflows: list(b.workflows, `buckets.${i}.workflows`),
      streamViews: list(b.streamViews, `buckets.${i}.streamViews`),
      slos: list(b.slos, `buckets.${i}.slos`),
    };
  });
  const names = buckets.map((b) => b.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) throw new SettingsError(`buckets: the name "${dup}" is listed twice`);
  // slo_burn triggers name their SLO: a name must say which one.
  const sloNames = buckets.flatMap((b) => b.slos.map((o) => String(o.name)));
  const dupSlo = sloNames.find((n, i) => sloNames.indexOf(n) !== i);
  if (dupSlo !== undefined) throw new SettingsError(`slos: the name "${dupSlo}" is listed twice`);
  const doc: SettingsDocument = {
    version: 1,
    account: typeof d.account === 'string' ? d.account : '',
    buckets,
    exclusions: list(d.exclusions, 'exclusions'),
    redactions: list(d.redactions, 'redactions'),
  };
  const missing = new Set<string>();
  const filled = fillEnv(doc, env, missing) as SettingsDocument;
  if (missing.size)
    throw new SettingsError(
      `not set in the environment: ${[...missing].join(', ')} (the file references them as \${NAME})`,
    );
  return filled;
}

function fillEnv(v: unknown, env: (name: string) => string | undefined, missing: Set<string>): unknown {
  if (typeof v === 'string')
    return v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      const value = env(name);
      if (value === undefined) missing.add(name);
      return value ?? '';
    });
  if (Array.isArray(v)) return v.map((x) => fillEnv(x, env, missing));
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v as Obj).map(([k, x]) => [k, fillEnv(x, env, missing)]));
  return v;
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
