import { parse, stringify } from 'yaml';
import { apiError, SettingsError, type Obj, type SettingsApi } from './settings-api.js';

/**
 * The settings document (docs/settings-as-code.md): an account's settings read through the API
 * into document form (bucket names for sids, no ids or times), written as YAML with `${NAME}`
 * references for secrets, and read back from YAML with those references filled.
 */

export interface SettingsDocument {
  version: 1;
  account: string;
  buckets: BucketDoc[];
  exclusions: Obj[];
  redactions: Obj[];
}

export interface BucketDoc {
  name: string;
  verifySslCerts: boolean;
  /** its consumer identification sources, in the order they are tried; written when not empty */
  consumerIdentification?: Obj[];
  workflows: Obj[];
  streamViews: Obj[];
  slos: Obj[];
}

export const omit = (o: Obj, keys: readonly string[]): Obj =>
  Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));

const SYSTEM_FIELDS = ['sid', 'accountSid', 'bucketSid', 'createdAt', 'updatedAt', 'deletedAt'] as const;

/** The account's settings as the API shows them, in document form (bucket names, no ids or times). */
export async function current(api: SettingsApi): Promise<{ doc: SettingsDocument; ids: Ids }> {
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

export interface Ids {
  buckets: Map<string, string>;
  rules: Map<string, string>;
  workflows: Map<string, string>;
  views: Map<string, string>;
  /** SLO name -> sid */
  slos: Map<string, string>;
}

/** Null, empty-string descriptions and `[]`/null scopes are the API's defaults: left out. */
export function clean(o: Obj): Obj {
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
export function ruleKey(kind: string, r: Obj): string {
  return typeof r.name === 'string' ? `${kind}\nname\n${r.name}` : `${kind}\ncontent\n${stableJson(r)}`;
}

export const workflowKey = (bucket: string, w: Obj) =>
  `${bucket}\n${String(w.environment)}\n${String(w.name)}`;

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Obj)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

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
