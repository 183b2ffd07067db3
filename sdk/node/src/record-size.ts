import type { CapturedRecord } from './types.js';

/**
 * Estimated JSON size of a record without serialising it on the host's request path: the
 * strings that dominate (URL, headers, bodies) plus a fixed overhead for the structure.
 */
export function estimateSize(r: CapturedRecord): number {
  let n = 600 + r.request.url.length * 2 + r.request.path.length;
  n += headersSize(r.request.headers) + bodySize(r.request.body);
  if (r.response) n += headersSize(r.response.headers) + bodySize(r.response.body);
  for (const t of r.tags) n += t.key.length + t.value.length + 20;
  return n;
}

function headersSize(h: Record<string, unknown>): number {
  let n = 0;
  for (const k in h) {
    const v = h[k];
    n +=
      k.length +
      6 +
      (typeof v === 'string' ? v.length : Array.isArray(v) ? v.join(',').length + 4 * v.length : 8);
  }
  return n;
}

function bodySize(b: unknown): number {
  if (b === undefined || b === null) return 0;
  // Escapes can grow JSON text; 1.1 covers typical bodies.
  if (typeof b === 'string') return Math.ceil(b.length * 1.1) + 2;
  return 256;
}
