import { validation } from '../shared/errors.js';
import type { SecretBox } from '../shared/secret-box.js';

/**
 * The secrets inside workflow actions (docs/security.md "Secrets at rest"): the URLs an action
 * calls (`url`, `webhook_url`: a chat or automation hook URL is itself the credential), the values
 * of custom `headers` (Authorization, API keys), and the string values under credential-named keys
 * of a webhook `body` or an automation `data` object (`routing_key`, `apiKey`, `password`, …), and
 * the keys of the native alert channels (PagerDuty `routing_key`, Opsgenie `api_key`).
 * They are sealed (AES-256-GCM) in Postgres, opened for the runner, and masked in every API answer.
 *
 * A masked value sent back (the dashboard saves what it read) keeps the stored secret only while
 * it goes to the same destination: the stored action it comes from has the same type, and the
 * action's URL keeps the stored URL's origin (scheme, host and port). Any other masked value is a
 * 400 naming it, so a secret never follows an edited URL to another host and is never silently
 * replaced by the mask.
 */

interface ActionLike {
  type?: unknown;
  config?: unknown;
  order?: unknown;
}

export const MASK = '****';
const URL_FIELDS = ['url', 'webhook_url'] as const;
/** Free-form objects sent to the destination: webhook `body`, automation `data`. */
const JSON_FIELDS = ['body', 'data'] as const;
/** Credentials that are config fields of their own: PagerDuty's `routing_key`, Opsgenie's `api_key`. */
const KEY_FIELDS = ['routing_key', 'api_key'] as const;
/** Where an action without a `url` of its own sends (its secrets keep to that origin). */
const DEFAULT_DESTINATIONS: Record<string, string> = {
  pagerduty: 'https://events.pagerduty.com/v2/enqueue',
  opsgenie: 'https://api.opsgenie.com',
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Words of a key (`apiKey`, `X-Auth-Token`, `routing_key`) that make its values credentials. */
const CREDENTIAL_WORDS = new Set([
  'key',
  'apikey',
  'token',
  'secret',
  'password',
  'passwd',
  'pwd',
  'pass',
  'passphrase',
  'auth',
  'authorization',
  'credential',
  'credentials',
  'signature',
  'sig',
  'cookie',
  'bearer',
  'dsn',
]);
/** Keys written as one lower-case word (`accesstoken`, `routingkey`) that end like a credential. */
const CREDENTIAL_ENDINGS =
  /(token|secret|password|passwd|passphrase|credentials?|signature|auth|authorization|apikey|routingkey|integrationkey|accesskey|secretkey|privatekey|signingkey)$/;

/** True for a key of a body or data object whose values are credentials. */
export function isCredentialKey(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  if (words.some((w) => CREDENTIAL_WORDS.has(w))) return true;
  return CREDENTIAL_ENDINGS.test(key.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/** Where a secret string sits in one action config. */
interface Where {
  field: string;
  /** header name (`headers`) or key path inside the object (`body`, `data`) */
  path?: string[];
}

/** Every string at or below a credential-named key is a secret, at any depth. */
function mapJson(
  v: unknown,
  path: string[],
  secret: boolean,
  f: (value: string, path: string[]) => string,
): unknown {
  if (typeof v === 'string') return secret ? f(v, path) : v;
  if (Array.isArray(v)) return v.map((x, i) => mapJson(x, [...path, String(i)], secret, f));
  if (isObject(v))
    // Object.fromEntries keeps a `__proto__` key of parsed JSON an own property.
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, mapJson(x, [...path, k], secret || isCredentialKey(k), f)]),
    );
  return v;
}

/** Applies `f` to each secret string of one action config (a copy; the input is not changed). */
function mapSecrets(
  config: Record<string, unknown>,
  f: (value: string, where: Where) => string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...config };
  for (const field of URL_FIELDS) if (typeof out[field] === 'string') out[field] = f(out[field], { field });
  for (const field of KEY_FIELDS)
    if (typeof out[field] === 'string') out[field] = f(out[field], { field, path: [] });
  if (isObject(out.headers))
    out.headers = Object.fromEntries(
      Object.entries(out.headers).map(([name, v]) => [
        name,
        typeof v === 'string' ? f(v, { field: 'headers', path: [name] }) : v,
      ]),
    );
  for (const field of JSON_FIELDS)
    if (isObject(out[field])) out[field] = mapJson(out[field], [], false, (v, path) => f(v, { field, path }));
  return out;
}

function mapActions<T extends ActionLike>(
  actions: readonly T[],
  f: (config: Record<string, unknown>, index: number) => Record<string, unknown>,
): T[] {
  return actions.map((a, i) => (isObject(a.config) ? { ...a, config: f(a.config, i) } : a));
}

export const sealActions = <T extends ActionLike>(actions: readonly T[], box: SecretBox): T[] =>
  mapActions(actions, (c) => mapSecrets(c, (v) => box.seal(v)));

/**
 * A value that does not open (sealed with another key) stays sealed: the API then shows it masked,
 * and the runner's action fails on it (a sealed URL is not http/https), never with a 500 or a retry
 * loop, and never with the value in a message.
 */
const openOrKeep = (box: SecretBox, v: string): string => {
  try {
    return box.open(v);
  } catch {
    return v;
  }
};

export const openActions = <T extends ActionLike>(actions: readonly T[], box: SecretBox): T[] =>
  mapActions(actions, (c) => mapSecrets(c, (v) => openOrKeep(box, v)));

/**
 * A URL with its secret parts masked: user info, every query value, and every path segment that
 * looks like a token (16 characters or more, letters and digits mixed, as in chat hook URLs).
 * Scheme, host and the other path segments stay readable, so a reader can tell hooks apart.
 */
export function maskUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return MASK;
  }
  if (u.username || u.password) {
    u.username = MASK;
    u.password = '';
  }
  u.pathname = u.pathname
    .split('/')
    .map((s) => (s.length >= 16 && /[A-Za-z]/.test(s) && /\d/.test(s) ? MASK : s))
    .join('/');
  const params = [...u.searchParams.keys()];
  u.search = '';
  for (const k of params) u.searchParams.append(k, MASK);
  // URLSearchParams encodes `*`; the mask reads better as it is (and `*` is valid in a URI).
  return u.toString().replaceAll('%2A', '*');
}

/** True when a URL holds a part maskUrl() writes: `****` as user info, a path segment or a query value. */
function hasMaskedParts(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url.includes(MASK);
  }
  const star = (s: string) => s.replaceAll('%2A', '*').replaceAll('%2a', '*') === MASK;
  return (
    star(u.username) ||
    u.pathname.split('/').some(star) ||
    [...u.searchParams.values()].some((v) => v === MASK)
  );
}

/**
 * Scheme, host and port of a URL; for a string the URL parser refuses (a template in the host),
 * its lower-cased `scheme://authority` without user info.
 */
function originOf(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    const o = new URL(url).origin;
    if (o !== 'null') return o;
  } catch {
    // read below
  }
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(?:[^/?#@]*@)?([^/?#]*)/i.exec(url);
  return m ? `${m[1]}${m[2]}`.toLowerCase() : undefined;
}

const maskOne = (value: string, where: Where): string =>
  where.field === 'headers' || where.path ? MASK : maskUrl(value);

/** Actions as the API shows them. */
export const maskActions = <T extends ActionLike>(actions: readonly T[]): T[] =>
  mapActions(actions, (c) => mapSecrets(c, maskOne));

/** The URL field an action calls (`url` or `webhook_url`), if it has one. */
const destinationField = (c: Record<string, unknown>): string | undefined =>
  URL_FIELDS.find((f) => typeof c[f] === 'string');

/** The value at `path` inside `v` (objects and arrays), or undefined. */
function at(v: unknown, path: readonly string[]): unknown {
  let cur = v;
  for (const k of path) {
    if (Array.isArray(cur)) cur = cur[Number(k)];
    else if (isObject(cur) && Object.hasOwn(cur, k)) cur = cur[k];
    else return undefined;
  }
  return cur;
}

/**
 * The stored action whose secrets an incoming action may keep: one of the same type whose URL,
 * masked, is the incoming URL (the one at the same index first, else the only such one, so a
 * reorder keeps each action's own secrets); else the one at the same index, if of the same type.
 */
function sourceOf(
  incoming: Record<string, unknown>,
  type: unknown,
  index: number,
  stored: readonly ActionLike[],
): Record<string, unknown> | undefined {
  const same = stored
    .map((s, j) => ({ j, config: s.type === type && isObject(s.config) ? s.config : undefined }))
    .filter((x): x is { j: number; config: Record<string, unknown> } => x.config !== undefined);
  const dest = destinationField(incoming);
  if (dest) {
    const v = incoming[dest];
    const match = same.filter((x) => typeof x.config[dest] === 'string' && maskUrl(x.config[dest]) === v);
    const here = match.find((x) => x.j === index);
    if (here) return here.config;
    if (match.length === 1) return match[0]!.config;
  }
  return same.find((x) => x.j === index)?.config;
}

type Reason = 'url' | 'origin' | 'nothing';

/** A masked value that may not be kept: at `at` (`actions.0.config.headers`), header or key `name`. */
interface Problem {
  at: string;
  name?: string;
  reason: Reason;
}

/** What to do, for one name or several (`X-Hook-Auth is masked …`, `a, b are masked …`). */
function says(reason: Reason, many: boolean): string {
  if (reason === 'url') return `has masked parts (${MASK}); enter the whole URL again when you change it`;
  const is = many ? 'are' : 'is';
  const its = many ? 'their values' : 'its value';
  return reason === 'origin'
    ? `${is} masked (${MASK}); enter ${its} again when the URL's origin (scheme, host or port) changes`
    : `${is} masked (${MASK}) but no stored value stands behind ${many ? 'them' : 'it'}; enter ${its}`;
}

/** The 400 for `problems`: details keyed by field (the dashboard shows each beside its field). */
function maskedError(problems: readonly Problem[]) {
  const groups = new Map<string, { at: string; reason: Reason; names: string[] }>();
  for (const p of problems) {
    const k = `${p.at}\n${p.reason}`;
    const g = groups.get(k) ?? { at: p.at, reason: p.reason, names: [] };
    if (p.name !== undefined) g.names.push(p.name);
    groups.set(k, g);
  }
  const details: Record<string, string> = {};
  const message: string[] = [];
  for (const { at: field, reason, names } of groups.values()) {
    const text = says(reason, names.length > 1);
    const detail = names.length ? `${names.join(', ')} ${text}` : text;
    details[`body.${field}`] = details[`body.${field}`] ? `${details[`body.${field}`]}; ${detail}` : detail;
    message.push(
      names.length === 1
        ? `${field}.${names[0]} ${text}`
        : names.length
          ? `${field}: ${detail}`
          : `${field} ${text}`,
    );
  }
  return validation(message.join('; '), details);
}

/**
 * Incoming actions with each masked value replaced by the stored (open) secret it stands for, when
 * it may be kept (see the top of this file). Throws a 400 VALIDATION_ERROR naming every masked
 * value that may not: the caller sends those values again. `stored` is empty on create.
 */
export function unmaskActions<T extends ActionLike>(
  incoming: readonly T[],
  stored: readonly ActionLike[],
): T[] {
  const problems: Problem[] = [];
  const out = mapActions(incoming, (c, i) => {
    const src = sourceOf(c, incoming[i]!.type, i, stored);
    const dest = destinationField(c);
    const was = dest && src ? src[dest] : undefined;
    // The URL first: the other secrets are kept only when the URL they go to keeps the origin.
    let url = dest ? (c[dest] as string) : undefined;
    if (dest && url !== undefined) {
      if (typeof was === 'string' && url === maskUrl(was)) url = was;
      else if (hasMaskedParts(url)) problems.push({ at: `actions.${i}.config.${dest}`, reason: 'url' });
    }
    const type = String(incoming[i]!.type);
    const origin = originOf(url ?? DEFAULT_DESTINATIONS[type]);
    const storedUrl = src
      ? dest
        ? was
        : URL_FIELDS.map((f) => src[f]).find((v) => typeof v === 'string')
      : undefined;
    const sameOrigin =
      origin !== undefined &&
      src !== undefined &&
      origin === originOf(storedUrl ?? DEFAULT_DESTINATIONS[type]);
    return mapSecrets(c, (v, where) => {
      if (!where.path) return where.field === dest && url !== undefined ? url : v;
      if (v !== MASK) return v;
      const kept = src ? at(src[where.field], where.path) : undefined;
      if (typeof kept === 'string' && sameOrigin) return kept;
      problems.push({
        at: `actions.${i}.config.${where.field}`,
        name: where.path.length ? where.path.join('.') : undefined,
        reason: typeof kept === 'string' ? 'origin' : 'nothing',
      });
      return v;
    });
  });
  if (problems.length) throw maskedError(problems);
  return out;
}

/** Masks the actions of a workflow, or of each workflow of a list, in an API answer. */
export function maskWorkflowPayload(payload: unknown): unknown {
  const maskOneWorkflow = (w: unknown) =>
    isObject(w) && Array.isArray(w.actions) && isObject(w.trigger)
      ? { ...w, actions: maskActions(w.actions as ActionLike[]) }
      : w;
  if (isObject(payload) && Array.isArray(payload.records))
    return { ...payload, records: payload.records.map(maskOneWorkflow) };
  return maskOneWorkflow(payload);
}
