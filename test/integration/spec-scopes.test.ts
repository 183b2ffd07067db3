import { beforeAll, describe, expect, it } from 'vitest';
import { SESSION_ONLY_SCOPES } from '../../services/shared/credentials.js';
import { SPEC_SCOPES } from '../../services/shared/scope-grants.js';
import {
  endpoints,
  fillPath,
  requiredQueryString,
  resolve,
  sample,
  type Endpoint,
  type OpenApiDoc,
} from '../fuzz/hostile-variants.js';
import { rawRequest, type RawResponse } from '../fuzz/raw-http.js';
import { seedResources, type SeededAccount } from '../fuzz/seed.js';
import { newAccount, testEnv } from '../helpers/client.js';

/**
 * The spec's scope list is the public contract: a token created through the API with exactly the
 * spec's scopes (docs/auth.md) reaches every operation of the OpenAPI document (routes added later
 * included), the ones Tapline adds for spec resources too (event markers, stream views, MCP token
 * management). Left out: credential-free operations, `/mcp` (MCP tokens only) and operations
 * reserved to administrators' sessions (a 403 naming a users:* scope, docs/auth.md).
 */

let doc: OpenApiDoc;
let seeded: SeededAccount;
let specToken: string;
let adminToken: string;
let accountSid: string;

const isPublic = (ep: Endpoint) =>
  ep.path === '/v1/openapi.json' ||
  ep.path === '/v1/authentication/signin' ||
  ep.path === '/v1/setup' ||
  ep.path.startsWith('/v1/invites/');

function call(ep: Endpoint, token: string, params: Record<string, string>): Promise<RawResponse> {
  const schema = ep.op.requestBody?.content['application/json']?.schema;
  const body = schema ? JSON.stringify(sample(resolve(schema, doc), doc, params)) : undefined;
  return rawRequest(testEnv().apiUrl, {
    method: ep.method,
    url: fillPath(ep.path, params) + requiredQueryString(ep, doc, params),
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body,
  });
}

beforeAll(async () => {
  doc = JSON.parse(
    (await rawRequest(testEnv().apiUrl, { method: 'GET', url: '/v1/openapi.json' })).text,
  ) as OpenApiDoc;
  const acct = await newAccount();
  adminToken = acct.apiToken;
  accountSid = acct.accountSid;
  seeded = await seedResources(
    { apiUrl: testEnv().apiUrl, ingestUrl: testEnv().ingestUrl },
    { accountSid: acct.accountSid, bucketSid: acct.bucketSid, token: acct.apiToken },
  );
  const created = await rawRequest(testEnv().apiUrl, {
    method: 'POST',
    url: `/v1/accounts/${acct.accountSid}/apiTokens`,
    headers: { authorization: `Bearer ${acct.apiToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'spec scopes', scopes: [...SPEC_SCOPES] }),
  });
  expect(created.status, created.text).toBe(201);
  const token = JSON.parse(created.text) as { token: string; scopes: string[] };
  expect([...token.scopes].sort()).toEqual([...SPEC_SCOPES].sort());
  specToken = token.token;
}, 180_000);

describe("a token with exactly the spec's scopes", () => {
  it('reaches every operation (no 403), Tapline additions for spec resources included', async () => {
    const ops = endpoints(doc).filter((ep) => !isPublic(ep) && ep.path !== '/mcp');
    expect(ops.length).toBeGreaterThanOrEqual(60);
    // Reads and writes first, deletions last (they use the spare resources).
    const order = (ep: Endpoint) => (ep.method === 'DELETE' ? 1 : 0);
    const wrong: string[] = [];
    const statuses = new Map<string, number>();
    for (const ep of [...ops].sort((a, b) => order(a) - order(b))) {
      const params = ep.method === 'DELETE' ? { ...seeded.params, ...seeded.spare } : seeded.params;
      const r = await call(ep, specToken, params);
      statuses.set(`${ep.method} ${ep.path}`, r.status);
      if (r.status === 401) wrong.push(`${ep.method} ${ep.path} -> 401 ${r.text.slice(0, 160)}`);
      if (r.status !== 403) continue;
      const scope = (JSON.parse(r.text) as { error?: { details?: { requiredScope?: string } } }).error
        ?.details?.requiredScope;
      if (!(SESSION_ONLY_SCOPES as readonly string[]).includes(scope ?? ''))
        wrong.push(`${ep.method} ${ep.path} -> 403 ${r.text.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
    // The resources the spec lists no scope for are really reached (not refused another way).
    const a = '/v1/accounts/{accountSid}';
    for (const op of [`GET ${a}/events`, `GET ${a}/mcpTokens`, `GET ${a}/buckets/{bucketSid}/streamViews`])
      expect(statuses.get(op), op).toBe(200);
  }, 300_000);
});

describe('granted scopes', () => {
  it('are listed by /v1/authentication/session; the role is read from the scopes given', async () => {
    const created = await rawRequest(testEnv().apiUrl, {
      method: 'POST',
      url: `/v1/accounts/${accountSid}/apiTokens`,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ingest only', scopes: ['requests:write'] }),
    });
    expect(created.status, created.text).toBe(201);
    const ingestToken = (JSON.parse(created.text) as { token: string }).token;
    const info = await rawRequest(testEnv().apiUrl, {
      method: 'GET',
      url: '/v1/authentication/session',
      headers: { authorization: `Bearer ${ingestToken}` },
    });
    expect(info.status, info.text).toBe(200);
    const body = JSON.parse(info.text) as { role: string; scopes: string[] };
    expect(body.scopes).toEqual(['requests:write', 'streamViews:write']);
    expect(body.role).toBe('ingest');
    const spec = await rawRequest(testEnv().apiUrl, {
      method: 'GET',
      url: '/v1/authentication/session',
      headers: { authorization: `Bearer ${specToken}` },
    });
    const scopes = (JSON.parse(spec.text) as { scopes: string[] }).scopes;
    for (const s of ['events:write', 'streamViews:delete', 'mcpTokens:write']) expect(scopes).toContain(s);
  });
});

describe('timestamps in answers', () => {
  const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
  const DATE_LIKE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/;
  function datesIn(v: unknown, path: string, out: [string, string][]): void {
    if (typeof v === 'string' && DATE_LIKE.test(v)) out.push([path, v]);
    else if (Array.isArray(v)) v.forEach((x, i) => datesIn(x, `${path}[${i}]`, out));
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) datesIn(x, `${path}.${k}`, out);
  }

  it('every timestamp of every GET answer is UTC with milliseconds (YYYY-MM-DDTHH:mm:ss.sssZ)', async () => {
    const gets = endpoints(doc).filter(
      (ep) => ep.method === 'GET' && !isPublic(ep) && ep.path !== '/mcp' && !ep.path.endsWith('/live'),
    );
    const wrong: string[] = [];
    let seen = 0;
    for (const ep of gets) {
      const r = await call(ep, specToken, seeded.params);
      if (r.status !== 200 || !r.text.startsWith('{')) continue;
      const found: [string, string][] = [];
      datesIn(JSON.parse(r.text), '', found);
      seen += found.length;
      for (const [path, v] of found) if (!ISO_MS_Z.test(v)) wrong.push(`GET ${ep.path} ${path} = ${v}`);
    }
    expect(wrong).toEqual([]);
    expect(seen).toBeGreaterThan(50);
  }, 300_000);
});
