import type { SecretBox } from '../shared/secret-box.js';

/**
 * The secrets inside workflow actions (docs/security.md "Secrets at rest"): the URLs an action
 * calls (`url`, `webhook_url`: a chat or automation hook URL is itself the credential) and the
 * values of custom `headers` (Authorization, API keys). They are sealed (AES-256-GCM) in Postgres,
 * opened for the runner, and masked in every API answer. A masked value sent back unchanged (the
 * dashboard saves what it read) keeps the stored secret.
 */

interface ActionLike {
  type?: unknown;
  config?: unknown;
  order?: unknown;
}

export const MASK = '****';
const URL_FIELDS = ['url', 'webhook_url'] as const;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Applies `f` to each secret string of one action config (a copy; the input is not changed). */
function mapSecrets(
  config: Record<string, unknown>,
  f: (value: string, where: { field: string; header?: string }) => string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...config };
  for (const field of URL_FIELDS) if (typeof out[field] === 'string') out[field] = f(out[field], { field });
  if (isObject(out.headers)) {
    const h: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(out.headers))
      h[name] = typeof v === 'string' ? f(v, { field: 'headers', header: name }) : v;
    out.headers = h;
  }
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

const maskOne = (value: string, where: { field: string }): string =>
  where.field === 'headers' ? MASK : maskUrl(value);

/** Actions as the API shows them. */
export const maskActions = <T extends ActionLike>(actions: readonly T[]): T[] =>
  mapActions(actions, (c) => mapSecrets(c, maskOne));

/**
 * Incoming actions with each masked value that equals the mask of the stored (open) value at the
 * same position replaced by the stored value: saving what was read keeps the secrets.
 */
export function unmaskActions<T extends ActionLike>(
  incoming: readonly T[],
  stored: readonly ActionLike[],
): T[] {
  return mapActions(incoming, (c, i) => {
    const old = stored[i];
    if (!old || old.type !== incoming[i]!.type || !isObject(old.config)) return c;
    const prev = old.config;
    return mapSecrets(c, (v, where) => {
      if (where.field === 'headers') {
        const was = isObject(prev.headers) ? prev.headers[where.header!] : undefined;
        return v === MASK && typeof was === 'string' ? was : v;
      }
      const was = prev[where.field];
      return typeof was === 'string' && v === maskUrl(was) && v !== was ? was : v;
    });
  });
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
