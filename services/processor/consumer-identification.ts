import { createHmac } from 'node:crypto';
import type { IdentificationSource } from '../../schemas/consumers.schema.js';

/**
 * Server-side consumer identification (docs/consumers.md): a bucket's ordered sources, compiled
 * once per rule load, read from a record that carries no `consumer` of its own. A value taken
 * from a credential is replaced by a keyed hash (HMAC-SHA256 with a key derived from the
 * service's secrets key), so the stored id names the credential without revealing it.
 */

export interface Consumer {
  id: string;
  group?: string;
}

type Reader = (request: Record<string, unknown>) => Consumer | undefined;

export interface CompiledIdentification {
  readers: readonly Reader[];
}

/** The consumer id of a hashed credential: `key_` and 16 hex digits of the keyed hash. */
export function credentialId(key: Buffer, accountSid: string, value: string): string {
  return `key_${createHmac('sha256', key).update(accountSid).update('\0').update(value).digest('hex').slice(0, 16)}`;
}

const MAX_ID = 256;

/** A header's first value, the name matched case-insensitively (records keep the sent case). */
export function headerValue(request: Record<string, unknown>, name: string): string | undefined {
  const headers = request.headers;
  if (typeof headers !== 'object' || headers === null) return undefined;
  const h = headers as Record<string, unknown>;
  let v = h[name];
  if (v === undefined)
    for (const k in h)
      if (k.length === name.length && k.toLowerCase() === name) {
        v = h[k];
        break;
      }
  if (Array.isArray(v)) v = v[0];
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function queryValue(request: Record<string, unknown>, name: string): string | undefined {
  const qs = request.queryString;
  let v: unknown;
  if (typeof qs === 'object' && qs !== null) v = (qs as Record<string, unknown>)[name];
  else {
    // A record without a parsed query string: the one in its path or URL.
    const raw =
      typeof request.path === 'string' ? request.path : typeof request.url === 'string' ? request.url : '';
    const q = raw.indexOf('?');
    if (q >= 0) v = new URLSearchParams(raw.slice(q + 1)).get(name) ?? undefined;
  }
  if (Array.isArray(v)) v = v[0];
  if (typeof v === 'number') return String(v);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

const BEARER = /^bearer\s+(\S+)\s*$/i;

/** The payload of a JWT (its middle part, base64url JSON), its signature not checked. */
export function jwtPayload(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[1]!.length > 16_384) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function claimText(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return typeof v === 'string' && v !== '' ? v.slice(0, MAX_ID) : undefined;
}

/** Hashed ids remembered per compiled bucket: a client sends the same key on every call. */
const HASH_CACHE_SIZE = 10_000;

function compileSource(src: IdentificationSource, key: Buffer, accountSid: string): Reader {
  const hashed = new Map<string, string>();
  const hashOf = (value: string): string => {
    let id = hashed.get(value);
    if (id === undefined) {
      id = credentialId(key, accountSid, value);
      // Bounded: emptied when full (the set of keys in use is refilled within moments).
      if (hashed.size >= HASH_CACHE_SIZE) hashed.clear();
      hashed.set(value, id);
    }
    return id;
  };
  const asId = (value: string, hash: boolean): Consumer => ({
    id: hash ? hashOf(value) : value.slice(0, MAX_ID),
  });
  switch (src.type) {
    case 'header': {
      const name = src.name.toLowerCase();
      const hash = src.hash !== false;
      return (r) => {
        const v = headerValue(r, name);
        return v === undefined ? undefined : asId(v, hash);
      };
    }
    case 'bearer':
      return (r) => {
        const m = BEARER.exec(headerValue(r, 'authorization') ?? '');
        return m ? asId(m[1]!, true) : undefined;
      };
    case 'jwtClaim': {
      const name = (src.header ?? 'Authorization').toLowerCase();
      const { claim, groupClaim } = src;
      return (r) => {
        const raw = headerValue(r, name);
        if (raw === undefined) return undefined;
        const token = BEARER.exec(raw)?.[1] ?? raw.trim();
        const payload = jwtPayload(token);
        const id = payload && claimText(payload[claim]);
        if (id === undefined) return undefined;
        const group = groupClaim !== undefined ? claimText(payload![groupClaim]) : undefined;
        return group === undefined ? { id } : { id, group };
      };
    }
    case 'query': {
      const hash = src.hash === true;
      return (r) => {
        const v = queryValue(r, src.name);
        return v === undefined ? undefined : asId(v, hash);
      };
    }
  }
}

/** A bucket's sources compiled; null when it has none (the step then costs one check). */
export function compileIdentification(
  sources: readonly IdentificationSource[],
  key: Buffer,
  accountSid: string,
): CompiledIdentification | null {
  if (sources.length === 0) return null;
  return { readers: sources.map((s) => compileSource(s, key, accountSid)) };
}

/** The first source that gives a consumer, or undefined. */
export function identify(c: CompiledIdentification, request: Record<string, unknown>): Consumer | undefined {
  for (const read of c.readers) {
    const found = read(request);
    if (found) return found;
  }
  return undefined;
}

/**
 * The first source that gives a consumer, with its index in the list: the identification preview's
 * answer (the processor's step calls `identify`, which allocates nothing more).
 */
export function identifyWithSource(
  c: CompiledIdentification,
  request: Record<string, unknown>,
): { consumer: Consumer; source: number } | undefined {
  for (let i = 0; i < c.readers.length; i++) {
    const found = c.readers[i]!(request);
    if (found) return { consumer: found, source: i };
  }
  return undefined;
}

/** What the processor writes for a redacted value: `[REDACTED]`, `[REDACTED:<type>]` or a masked run. */
const REDACTED = /\[REDACTED(?::[^\]\s]{1,100})?\]|\*{3,}/;

/**
 * Whether the value `src` reads from a stored request is redacted there: the processor read the
 * original before redacting it, so an id the preview computes from the stored value is not the id
 * the call got.
 */
export function sourceValueRedacted(src: IdentificationSource, request: Record<string, unknown>): boolean {
  const name =
    src.type === 'header'
      ? src.name
      : src.type === 'bearer'
        ? 'authorization'
        : src.type === 'jwtClaim'
          ? (src.header ?? 'Authorization')
          : undefined;
  const value =
    name !== undefined
      ? headerValue(request, name.toLowerCase())
      : queryValue(request, (src as { name: string }).name);
  return value !== undefined && REDACTED.test(value);
}
