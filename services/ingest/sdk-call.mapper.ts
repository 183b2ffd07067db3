import { fillFromUrl } from './record.normalizer.js';

/** Header value lookup, case-insensitive, first value of an array. */
function header(headers: unknown, name: string): string | null {
  if (!headers || typeof headers !== 'object') return null;
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? String(v[0] ?? '') : v == null ? null : String(v);
  }
  return null;
}

function bodySize(body: unknown): number | null {
  if (body == null) return null;
  return Buffer.byteLength(typeof body === 'string' ? body : JSON.stringify(body));
}

/**
 * Maps one call in the existing SDKs' wire format onto a request record (docs/processing.md): host, path,
 * port and queryString come from the absolute `url`; `responseTime` becomes `timings.duration`;
 * tags are kept; traces become JSON strings (the spec types them as strings).
 */
export function sdkCallToRecord(call: Record<string, unknown>): Record<string, unknown> {
  const req = call.request as Record<string, unknown>;
  const res = (call.response ?? null) as Record<string, unknown> | null;
  const request: Record<string, unknown> = {
    ip: req.ip ?? null,
    method: String(req.method).toUpperCase(),
    url: req.url,
    headers: req.headers ?? {},
    body: req.body ?? null,
    contentType: header(req.headers, 'content-type'),
    size: bodySize(req.body),
  };
  fillFromUrl(request, String(req.url));
  const responseTime = typeof res?.responseTime === 'number' ? res.responseTime : null;
  const received = typeof req.received === 'string' ? req.received : undefined;
  const start = received ? Date.parse(received) : null;
  const record: Record<string, unknown> = {
    contextSid: call.contextSid ?? null,
    direction: call.direction ?? 'in',
    request,
    response: res
      ? {
          statusCode: res.status ?? null,
          headers: res.headers ?? {},
          size: typeof res.size === 'number' ? res.size : bodySize(res.body),
          body: res.body ?? null,
          contentType: header(res.headers, 'content-type'),
        }
      : null,
    timings:
      responseTime === null
        ? null
        : { duration: responseTime, start, end: start !== null ? start + responseTime : null },
    tags: Array.isArray(call.tags) ? call.tags : [],
    traces: Array.isArray(call.traces) ? call.traces.map((t) => JSON.stringify(t)) : null,
  };
  if (received) record.createdAt = new Date(received).toISOString();
  return record;
}
