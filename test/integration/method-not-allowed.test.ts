import { describe, expect, it } from 'vitest';
import { fillPath, type OpenApiDoc } from '../fuzz/hostile-variants.js';
import { rawRequest } from '../fuzz/raw-http.js';
import { testEnv } from '../helpers/client.js';

/**
 * Issue 14 point 14 (Schemathesis findings): a known path asked with a method it does not have
 * answers 405 with an `Allow` header listing the methods it has, in the error envelope (not 404);
 * request headers over the limit answer 431, and the OpenAPI document declares that 431.
 */

const WRONG = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'TRACE', 'OPTIONS'];

async function openapi(): Promise<OpenApiDoc> {
  const res = await rawRequest(testEnv().apiUrl, { method: 'GET', url: '/v1/openapi.json' });
  expect(res.status).toBe(200);
  return JSON.parse(res.text) as OpenApiDoc;
}

function envelope(text: string): { code: string; message: string } {
  const body = JSON.parse(text) as { success: boolean; error: { code: string; message: string } };
  expect(body.success).toBe(false);
  return body.error;
}

function allowOf(h: string | string[] | undefined): string[] {
  return String(h ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean)
    .sort();
}

describe('wrong method on a known path', () => {
  it('TRACE and QUERY /mcp answer 405 with Allow, in the envelope', async () => {
    // QUERY carries a body: it must not be refused for a missing Content-Type first.
    for (const method of ['TRACE', 'QUERY']) {
      const res = await rawRequest(testEnv().apiUrl, { method, url: '/mcp' });
      expect(res.status, method).toBe(405);
      expect(allowOf(res.headers.allow)).toContain('POST');
      expect(envelope(res.text).code).toBe('METHOD_NOT_ALLOWED');
    }
  });

  it('a static path next to a parameter route lists only its own methods', async () => {
    const res = await rawRequest(testEnv().apiUrl, {
      method: 'OPTIONS',
      url: '/v1/accounts/acc_ZZZZZZZZZZZZZZZZZZZZZZZZZZZ/environments/e1/buckets/bkt_ZZZZZZZZZZZZZZZZZZZZZZZZZZZ/workflows/preview',
    });
    expect(res.status).toBe(405);
    expect(allowOf(res.headers.allow)).toEqual(['POST']);
  });

  it('every path of the OpenAPI document answers 405 with its methods for every other method', async () => {
    const doc = await openapi();
    const problems: string[] = [];
    // `/exclusions/preview` is also `/exclusions/{exclusionSid}`: a method of that one is routed.
    const patterns = Object.entries(doc.paths).map(([p, item]) => ({
      re: new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      methods: Object.keys(item).map((m) => m.toUpperCase()),
    }));
    for (const [path, item] of Object.entries(doc.paths)) {
      const declared = Object.keys(item).map((m) => m.toUpperCase());
      const url = fillPath(path, {});
      const routed = patterns.filter((p) => p.re.test(url)).flatMap((p) => p.methods);
      for (const method of WRONG.filter((m) => !routed.includes(m))) {
        const res = await rawRequest(testEnv().apiUrl, { method, url });
        const allow = allowOf(res.headers.allow);
        if (res.status !== 405) {
          problems.push(`${method} ${path} -> ${res.status} ${res.text.slice(0, 120)}`);
          continue;
        }
        const missing = declared.filter((m) => !allow.includes(m));
        if (missing.length)
          problems.push(`${method} ${path}: Allow ${allow.join(',')} lacks ${missing.join(',')}`);
        if (allow.includes(method)) problems.push(`${method} ${path}: Allow lists ${method}`);
        if (envelope(res.text).code !== 'METHOD_NOT_ALLOWED') problems.push(`${method} ${path}: ${res.text}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('an unknown path stays a 404 for any method', async () => {
    for (const method of ['GET', 'POST', 'TRACE', 'DELETE']) {
      const res = await rawRequest(testEnv().apiUrl, {
        method,
        url: '/v1/no-such-thing',
        headers: { accept: 'application/json' },
      });
      expect(res.status, method).toBe(404);
      expect(envelope(res.text).code).toBe('RESOURCE_NOT_FOUND');
    }
  });

  it('the ingest listener answers 405 with Allow: POST on its ingest path', async () => {
    const res = await rawRequest(testEnv().ingestUrl, {
      method: 'GET',
      url: '/v1/buckets/bkt_ZZZZZZZZZZZZZZZZZZZZZZZZZZZ/ingest',
    });
    expect(res.status).toBe(405);
    expect(allowOf(res.headers.allow)).toContain('POST');
    expect(envelope(res.text).code).toBe('METHOD_NOT_ALLOWED');
  });
});

describe('request headers over the limit', () => {
  it('answer 431 in the envelope, and every operation of the document declares it', async () => {
    const res = await rawRequest(testEnv().apiUrl, {
      method: 'GET',
      url: '/v1/authentication/verify',
      headers: { 'x-big': 'a'.repeat(20_000) },
    });
    expect(res.status).toBe(431);
    envelope(res.text);
    const doc = await openapi();
    const undeclared: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const responses = (op as { responses?: Record<string, unknown> }).responses ?? {};
        if (!('431' in responses)) undeclared.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(undeclared).toEqual([]);
  });
});
