import { ok, type Step } from '../pipeline.js';
import { copyWith } from '../record-copy.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NUMERIC = /^\d+$/;
const HEX = /^[0-9a-f]{16,}$/i;
// Shorter hex (short git SHAs, hashes): 7+ chars with a digit and a letter, so words stay words.
const SHORT_HEX = /^(?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{7,15}$/i;
// Mixed letters+digits of 20+ chars (ULIDs, Mongo-ish ids, base62 sids like req_xxx).
const OPAQUE = /^(?=.*\d)[A-Za-z0-9_-]{20,}$/;
// Prefixed ids (`req_…`, Stripe-style `cus_…`): 16+ chars after the prefix, or 8+ with a digit.
const PREFIXED_SID = /^[a-z]{2,6}_(?:[A-Za-z0-9]{16,}|(?=[A-Za-z]*\d)[A-Za-z0-9]{8,})$/;

function isIdSegment(seg: string): boolean {
  return (
    NUMERIC.test(seg) ||
    UUID.test(seg) ||
    HEX.test(seg) ||
    SHORT_HEX.test(seg) ||
    PREFIXED_SID.test(seg) ||
    OPAQUE.test(seg)
  );
}

/** The path without its query string: what template rules are matched against. */
function pathWithoutQuery(path: string): string {
  const q = path.indexOf('?');
  return q >= 0 ? path.slice(0, q) : path;
}

/** `/users/123/orders/9f8e…` -> `/users/{id}/orders/{id}`: the template metrics group by. */
export function endpointTemplate(path: string): string {
  const clean = pathWithoutQuery(path);
  if (clean.length > 2048) return clean.slice(0, 2048);
  return clean
    .split('/')
    .map((seg) => (seg && isIdSegment(seg) ? '{id}' : seg))
    .join('/');
}

/**
 * The record's endpoint: a non-empty one the client sent (an SDK that knows the framework's route)
 * is kept as it is; otherwise the first of the bucket's endpoint template rules matching the path
 * (and method) names it, and without a match the automatic template does. The record is copied
 * with the new field (copyWith), so the sink stores it (pipeline.ts).
 */
export const endpointStep: Step = (record, ctx) => {
  if (typeof record.endpoint === 'string' && record.endpoint !== '') return ok(record);
  const path = typeof record.request.path === 'string' ? record.request.path : '';
  if (!path) return ok(copyWith(record, { endpoint: '' }));
  const rules = ctx.rules.endpointTemplates;
  if (rules !== null) {
    const method = typeof record.request.method === 'string' ? record.request.method.toUpperCase() : '';
    const matched = rules.match(pathWithoutQuery(path), method);
    if (matched !== null) return ok(copyWith(record, { endpoint: matched }));
  }
  return ok(copyWith(record, { endpoint: endpointTemplate(path) }));
};
