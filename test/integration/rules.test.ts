import { describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../services/shared/credentials.js';
import { api, http, newAccount, testEnv, type HttpResult, type TestAccount } from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

type Rec = Record<string, unknown> & { sid: string };
type List<T = Rec> = { hasMore: boolean; records: T[] };
type ErrorBody = {
  success: false;
  error: { code: string; message: string; details: Record<string, string> };
};

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const errorOf = (res: HttpResult<unknown>) => (res.body as ErrorBody).error;

/** A 400 VALIDATION_ERROR whose details name `field` (for example `body.pathPattern`). */
function expect400(res: HttpResult<unknown>, field: string): string {
  expect(res.status, res.text).toBe(400);
  const err = errorOf(res);
  expect(err.code).toBe('VALIDATION_ERROR');
  expect(Object.keys(err.details), res.text).toContain(field);
  return err.details[field]!;
}

interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: unknown;
  scope: string;
}

/**
 * The guards every endpoint has: no token and a bad token are 401, a token without the scope is
 * 403 naming it, and a caller from another account gets 404 (also with every scope).
 */
async function expectGuarded(call: Call, other: TestAccount): Promise<void> {
  const url = testEnv().apiUrl + call.path;
  const body = call.body;
  const none = await http(call.method, url, { body });
  expect(none.status, `${call.method} ${call.path} without token`).toBe(401);
  expect(errorOf(none).code).toBe('INVALID_TOKEN');
  const bad = await http(call.method, url, { body, token: 'at_live_' + 'x'.repeat(40) });
  expect(bad.status).toBe(401);
  expect(errorOf(bad).code).toBe('INVALID_TOKEN');

  const acctSid = /\/v1\/accounts\/(acc_[A-Za-z0-9]+)/.exec(call.path)?.[1];
  // Paths without an account segment (the SDK settings) test their 403 themselves.
  if (acctSid) {
    const lacking = await tokenWithScopes(
      { accountSid: acctSid },
      ALL_SCOPES.filter((s) => s !== call.scope),
    );
    const forbidden = await http(call.method, url, { body, token: lacking });
    expect(forbidden.status, `${call.method} ${call.path} lacking ${call.scope}`).toBe(403);
    expect(errorOf(forbidden)).toMatchObject({ code: 'FORBIDDEN', details: { requiredScope: call.scope } });
  }
  const foreign = await http(call.method, url, { body, token: other.apiToken });
  expect(foreign.status, `${call.method} ${call.path} from another account`).toBe(404);
  expect(errorOf(foreign).code).toBe('RESOURCE_NOT_FOUND');
}

describe('exclusions', () => {
  it('creates with defaults, lists, gets, replaces and deletes an exclusion', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/exclusions`;

    const created = await a.post<Rec>(base, { name: 'preflight', pathPattern: '*', method: 'options' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      sid: expect.stringMatching(/^xcl_[A-Za-z0-9]{27}$/),
      accountSid: acct.accountSid,
      name: 'preflight',
      description: '',
      pathPattern: '*',
      method: 'OPTIONS',
      statusCode: null,
      buckets: null,
      environments: null,
      isActive: true,
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: null,
    });
    const second = await a.post<Rec>(base, {
      name: 'health',
      description: 'load balancer checks',
      pathPattern: '/a/*/v*/h*',
      method: '*',
      statusCode: 200,
      isActive: false,
    });
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({
      description: 'load balancer checks',
      statusCode: 200,
      isActive: false,
    });

    const page1 = await a.get<List>(`${base}?limit=1&sort=name&order=asc`);
    expect(page1.status).toBe(200);
    expect(page1.body).toEqual({ hasMore: true, records: [second.body] });
    const page2 = await a.get<List>(`${base}?limit=1&page=2&sort=name&order=asc`);
    expect(page2.body).toEqual({ hasMore: false, records: [created.body] });

    const sid = created.body.sid;
    expect((await a.get(`${base}/${sid}`)).body).toEqual(created.body);

    // PUT is a full replace: description and statusCode fall back when omitted.
    const upd = await a.put<Rec>(`${base}/${second.body.sid}`, {
      name: 'health2',
      pathPattern: '/healthz',
      method: 'get',
      isActive: true,
    });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body).toMatchObject({
      sid: second.body.sid,
      name: 'health2',
      description: '',
      pathPattern: '/healthz',
      method: 'GET',
      statusCode: null,
      isActive: true,
      createdAt: second.body.createdAt,
      updatedAt: expect.stringMatching(ISO_MS),
    });

    const del = await a.delete(`${base}/${sid}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ sid, deleted: true });
    expect((await a.get(`${base}/${sid}`)).status).toBe(404);
    expect((await a.delete(`${base}/${sid}`)).status).toBe(404);
    expect((await a.get(`${base}/xcl_short`)).status).toBe(404);
    expect((await a.get(`${base}/not-a-sid`)).status).toBe(404);
  });

  it('scopes a rule to buckets and environments; a Shape B PUT keeps that scope', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/exclusions`;
    const created = await a.post<Rec>(base, {
      name: 'scoped',
      pathPattern: '/internal*',
      method: 'GET',
      buckets: [acct.bucketSid],
      environments: ['prod01', 'stage1'],
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ buckets: [acct.bucketSid], environments: ['prod01', 'stage1'] });

    const shapeB = { name: 'scoped', pathPattern: '/internal*', method: 'GET', isActive: false };
    const kept = await a.put<Rec>(`${base}/${created.body.sid}`, shapeB);
    expect(kept.body).toMatchObject({ buckets: [acct.bucketSid], environments: ['prod01', 'stage1'] });
    const cleared = await a.put<Rec>(`${base}/${created.body.sid}`, {
      ...shapeB,
      buckets: null,
      environments: [],
    });
    expect(cleared.body).toMatchObject({ buckets: null, environments: null });
  });

  it('rejects invalid bodies with details naming each field', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/exclusions`;
    const ok = { name: 'x', pathPattern: '/x', method: 'GET' };

    expect400(await a.post(base, { pathPattern: '/x', method: 'GET' }), 'body.name');
    expect400(await a.post(base, { name: 'x', method: 'GET' }), 'body.pathPattern');
    expect400(await a.post(base, { name: 'x', pathPattern: '/x' }), 'body.method');
    expect400(await a.post(base, { ...ok, method: 'FETCH' }), 'body.method');
    expect400(await a.post(base, { ...ok, pathPattern: 'users' }), 'body.pathPattern');
    expect400(await a.post(base, { ...ok, pathPattern: '' }), 'body.pathPattern');
    expect400(await a.post(base, { ...ok, pathPattern: '/a b' }), 'body.pathPattern');
    expect400(await a.post(base, { ...ok, pathPattern: '/' + 'a'.repeat(2048) }), 'body.pathPattern');
    expect400(await a.post(base, { ...ok, statusCode: 700 }), 'body.statusCode');
    expect400(await a.post(base, { ...ok, statusCode: 99 }), 'body.statusCode');
    expect400(await a.post(base, { ...ok, colour: 'red' }), 'body.colour');
    expect400(await a.post(base, { ...ok, environments: ['PROD'] }), 'body.environments.0');
    expect(expect400(await a.post(base, { ...ok, buckets: [other.bucketSid] }), 'body.buckets.0')).toBe(
      'is not a bucket of this account',
    );
    const nullStatus = await a.post<Rec>(base, { ...ok, statusCode: null, description: null });
    expect(nullStatus.status).toBe(201);
    expect(nullStatus.body).toMatchObject({ statusCode: null, description: '' });

    const sid = nullStatus.body.sid;
    expect400(await a.put(`${base}/${sid}`, ok), 'body.isActive');
    expect400(await a.put(`${base}/${sid}`, { ...ok, isActive: true, method: 'BREW' }), 'body.method');
    expect400(await a.get(`${base}?limit=101`), 'querystring.limit');
    expect400(await a.get(`${base}?sort=pathPattern`), 'querystring.sort');
  });

  it('guards every exclusion endpoint (401, 403, 404 for another account)', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}/exclusions`;
    const body = { name: 'x', pathPattern: '/x', method: 'GET', isActive: true };
    const sid = (await api(acct.apiToken).post<Rec>(base, body)).body.sid;
    for (const call of [
      { method: 'GET', path: base, scope: 'exclusions:read' },
      { method: 'POST', path: base, body, scope: 'exclusions:write' },
      { method: 'GET', path: `${base}/${sid}`, scope: 'exclusions:read' },
      { method: 'PUT', path: `${base}/${sid}`, body, scope: 'exclusions:write' },
      { method: 'DELETE', path: `${base}/${sid}`, scope: 'exclusions:delete' },
    ] as Call[])
      await expectGuarded(call, other);
    // The other account's own path with this account's rule sid is a 404 too.
    const theirs = api(other.apiToken);
    const otherBase = `/v1/accounts/${other.accountSid}/exclusions`;
    expect((await theirs.get(`${otherBase}/${sid}`)).status).toBe(404);
    expect((await theirs.put(`${otherBase}/${sid}`, body)).status).toBe(404);
    expect((await theirs.delete(`${otherBase}/${sid}`)).status).toBe(404);
    expect((await theirs.get<List>(otherBase)).body.records).toEqual([]);
    expect((await api(acct.apiToken).get(`${base}/${sid}`)).status).toBe(200);
  });
});

describe('redactions', () => {
  it('creates with defaults, lists, gets, replaces and deletes a redaction', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/redactions`;

    const masked = await a.post<Rec>(base, {
      name: 'passwords',
      fieldPath: '$..password',
      redactionType: 'mask',
      replacementValue: 'ignored for mask',
    });
    expect(masked.status, masked.text).toBe(201);
    expect(masked.body).toEqual({
      sid: expect.stringMatching(/^rdc_[A-Za-z0-9]{27}$/),
      accountSid: acct.accountSid,
      name: 'passwords',
      description: '',
      fieldPath: '$..password',
      redactionType: 'mask',
      replacementValue: null,
      redactAt: 'server',
      buckets: null,
      environments: null,
      isActive: true,
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: null,
    });
    const replaced = await a.post<Rec>(base, {
      name: 'cards',
      description: 'PAN in checkout',
      fieldPath: '$.request.body.card.number',
      redactionType: 'replace',
      replacementValue: '[card]',
      redactAt: 'client',
      isActive: false,
      buckets: [acct.bucketSid],
      environments: ['prod01'],
    });
    expect(replaced.status, replaced.text).toBe(201);
    expect(replaced.body).toMatchObject({
      replacementValue: '[card]',
      redactAt: 'client',
      isActive: false,
      buckets: [acct.bucketSid],
      environments: ['prod01'],
    });

    const list = await a.get<List>(`${base}?sort=createdAt&order=asc`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ hasMore: false, records: [masked.body, replaced.body] });
    expect((await a.get(`${base}/${replaced.body.sid}`)).body).toEqual(replaced.body);

    // Full replace of Shape B fields; redactAt and scoping are kept when omitted.
    const upd = await a.put<Rec>(`${base}/${replaced.body.sid}`, {
      name: 'cards',
      fieldPath: '$.request.headers.Authorization',
      redactionType: 'hash',
      isActive: true,
    });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body).toMatchObject({
      description: '',
      fieldPath: '$.request.headers.Authorization',
      redactionType: 'hash',
      replacementValue: null,
      redactAt: 'client',
      buckets: [acct.bucketSid],
      environments: ['prod01'],
      isActive: true,
      updatedAt: expect.stringMatching(ISO_MS),
    });
    const moved = await a.put<Rec>(`${base}/${replaced.body.sid}`, {
      name: 'cards',
      fieldPath: '$.card',
      redactionType: 'remove',
      redactAt: 'server',
      isActive: true,
    });
    expect(moved.body.redactAt).toBe('server');

    const del = await a.delete(`${base}/${masked.body.sid}`);
    expect(del.body).toEqual({ sid: masked.body.sid, deleted: true });
    expect((await a.get(`${base}/${masked.body.sid}`)).status).toBe(404);
    expect((await a.get(`${base}/rdc_nope`)).status).toBe(404);
  });

  it('accepts every documented field path form', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/redactions`;
    for (const fieldPath of [
      '$.a.b',
      '$.list[*].field',
      '$..password',
      "$['quoted key']",
      '$.a[0]',
      '$.request.body.user.ssn',
      '$.response.body..token',
      '$.request.headers.x-api-key',
      '$.response.headers.set-cookie',
      '$.request.queryString.apiKey',
    ]) {
      const res = await a.post(base, { name: fieldPath, fieldPath, redactionType: 'hash' });
      expect(res.status, `${fieldPath}: ${res.text}`).toBe(201);
      expect(res.body.fieldPath).toBe(fieldPath);
    }
  });

  it('rejects invalid bodies with details naming each field', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/redactions`;
    const ok = { name: 'x', fieldPath: '$.x', redactionType: 'mask' };

    expect400(await a.post(base, { fieldPath: '$.x', redactionType: 'mask' }), 'body.name');
    expect400(await a.post(base, { name: 'x', redactionType: 'mask' }), 'body.fieldPath');
    expect400(await a.post(base, { name: 'x', fieldPath: '$.x' }), 'body.redactionType');
    expect400(await a.post(base, { ...ok, redactionType: 'blur' }), 'body.redactionType');
    expect400(await a.post(base, { ...ok, redactAt: 'edge' }), 'body.redactAt');
    expect400(await a.post(base, { ...ok, fieldPath: 'password' }), 'body.fieldPath');
    expect(expect400(await a.post(base, { ...ok, fieldPath: '$.a[' }), 'body.fieldPath')).toContain(
      'expected a quoted key, an index or *',
    );
    expect(
      expect400(await a.post(base, { ...ok, fieldPath: '$.request.method' }), 'body.fieldPath'),
    ).toContain('must be followed by one of');
    expect(expect400(await a.post(base, { ...ok, fieldPath: '$..*' }), 'body.fieldPath')).toContain(
      'recursive descent needs a key name',
    );
    expect400(await a.post(base, { ...ok, fieldPath: '$.a[?(@.x)]' }), 'body.fieldPath');
    expect(
      expect400(await a.post(base, { ...ok, redactionType: 'replace' }), 'body.replacementValue'),
    ).toContain('required when redactionType is replace');
    expect400(
      await a.post(base, { ...ok, redactionType: 'replace', replacementValue: null }),
      'body.replacementValue',
    );

    const sid = (await a.post<Rec>(base, ok)).body.sid;
    expect400(await a.put(`${base}/${sid}`, ok), 'body.isActive');
    expect400(await a.put(`${base}/${sid}`, { ...ok, isActive: true, fieldPath: '$' }), 'body.fieldPath');
    expect400(await a.get(`${base}?page=0`), 'querystring.page');
    expect400(await a.get(`${base}?order=sideways`), 'querystring.order');
  });

  it('guards every redaction endpoint (401, 403, 404 for another account)', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}/redactions`;
    const body = { name: 'x', fieldPath: '$.x', redactionType: 'remove', isActive: true };
    const sid = (await api(acct.apiToken).post<Rec>(base, body)).body.sid;
    for (const call of [
      { method: 'GET', path: base, scope: 'redactions:read' },
      { method: 'POST', path: base, body, scope: 'redactions:write' },
      { method: 'GET', path: `${base}/${sid}`, scope: 'redactions:read' },
      { method: 'PUT', path: `${base}/${sid}`, body, scope: 'redactions:write' },
      { method: 'DELETE', path: `${base}/${sid}`, scope: 'redactions:delete' },
    ] as Call[])
      await expectGuarded(call, other);
    const theirs = api(other.apiToken);
    const otherBase = `/v1/accounts/${other.accountSid}/redactions`;
    expect((await theirs.get(`${otherBase}/${sid}`)).status).toBe(404);
    expect((await theirs.put(`${otherBase}/${sid}`, body)).status).toBe(404);
    expect((await theirs.delete(`${otherBase}/${sid}`)).status).toBe(404);
    expect((await api(acct.apiToken).get(`${base}/${sid}`)).status).toBe(200);
  });
});

describe('SDK settings', () => {
  it('returns the active rules of the bucket for the asked redactAt', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const bucket2 = (await a.post<Rec>(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'b2' })).body.sid;
    const rdc = `/v1/accounts/${acct.accountSid}/redactions`;
    const xcl = `/v1/accounts/${acct.accountSid}/exclusions`;
    const mk = async (path: string, body: Record<string, unknown>) => {
      const res = await a.post<Rec>(path, body);
      expect(res.status, res.text).toBe(201);
      return res.body.sid;
    };
    const clientAll = await mk(rdc, {
      name: 'c1',
      fieldPath: '$..password',
      redactionType: 'mask',
      redactAt: 'client',
    });
    const clientReplace = await mk(rdc, {
      name: 'c2',
      fieldPath: '$.request.headers.authorization',
      redactionType: 'replace',
      replacementValue: '[hidden]',
      redactAt: 'client',
      buckets: [acct.bucketSid],
      environments: ['prod01'],
    });
    await mk(rdc, {
      name: 'c-other-bucket',
      fieldPath: '$.x',
      redactionType: 'remove',
      redactAt: 'client',
      buckets: [bucket2],
    });
    await mk(rdc, {
      name: 'c-inactive',
      fieldPath: '$.y',
      redactionType: 'remove',
      redactAt: 'client',
      isActive: false,
    });
    const server = await mk(rdc, { name: 's1', fieldPath: '$.ssn', redactionType: 'hash' });
    const x1 = await mk(xcl, { name: 'preflight', pathPattern: '*', method: 'OPTIONS', statusCode: 200 });
    const x2 = await mk(xcl, {
      name: 'health',
      pathPattern: '/health*',
      method: 'GET',
      environments: ['stage1'],
    });
    await mk(xcl, { name: 'other bucket', pathPattern: '/x', method: '*', buckets: [bucket2] });
    await mk(xcl, { name: 'inactive', pathPattern: '/y', method: '*', isActive: false });

    const sdk = `/v1/buckets/${acct.bucketSid}/sdk`;
    const client = await a.get(`${sdk}?redactAt=client&clientId=node-sdk-1`);
    expect(client.status, client.text).toBe(200);
    expect(client.body).toEqual({
      bucketSid: acct.bucketSid,
      clientId: 'node-sdk-1',
      redactAt: 'client',
      redactionRules: [
        { sid: clientAll, field: '$..password', action: 'mask', environments: null },
        {
          sid: clientReplace,
          field: '$.request.headers.authorization',
          action: 'replace',
          replacement: '[hidden]',
          environments: ['prod01'],
        },
      ],
      exclusionRules: [
        { sid: x1, path: '*', method: 'OPTIONS', statusCode: 200, environments: null },
        { sid: x2, path: '/health*', method: 'GET', statusCode: null, environments: ['stage1'] },
      ],
      // The bucket's SDK settings: never changed, so the defaults (docs/rules.md, "SDK settings").
      settings: {
        enabled: true,
        captureRequestBody: true,
        captureResponseBody: true,
        maxBodyBytes: 65_536,
        sampleRate: 1,
        interceptOutbound: true,
        debug: false,
      },
    });

    const srv = await a.get<{ redactionRules: { sid: string }[] }>(
      `${sdk}?redactAt=server&clientId=node-sdk-1`,
    );
    expect(srv.body.redactionRules.map((r) => r.sid)).toEqual([server]);

    const prod = await a.get<{ redactionRules: { sid: string }[]; exclusionRules: { sid: string }[] }>(
      `${sdk}?redactAt=client&clientId=c&environmentSid=stage1`,
    );
    expect(prod.body.redactionRules.map((r) => r.sid)).toEqual([clientAll]);
    expect(prod.body.exclusionRules.map((r) => r.sid)).toEqual([x1, x2]);

    const b2 = await a.get<{ redactionRules: { field: string }[] }>(
      `/v1/buckets/${bucket2}/sdk?redactAt=client&clientId=c`,
    );
    expect(b2.body.redactionRules.map((r) => r.field)).toEqual(['$..password', '$.x']);
  });

  it('validates the query and guards the endpoint', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const a = api(acct.apiToken);
    const sdk = `/v1/buckets/${acct.bucketSid}/sdk`;
    expect400(await a.get(`${sdk}?clientId=c`), 'querystring.redactAt');
    expect400(await a.get(`${sdk}?redactAt=client`), 'querystring.clientId');
    expect400(await a.get(`${sdk}?redactAt=edge&clientId=c`), 'querystring.redactAt');
    expect400(await a.get(`${sdk}?redactAt=client&clientId=`), 'querystring.clientId');
    expect400(
      await a.get(`${sdk}?redactAt=client&clientId=c&environmentSid=PROD`),
      'querystring.environmentSid',
    );

    const q = '?redactAt=client&clientId=c';
    await expectGuarded({ method: 'GET', path: sdk + q, scope: 'buckets:read' }, other);
    // buckets:read or requests:write (an SDK's ingest token) opens it; every other scope does not.
    const lacking = await tokenWithScopes(
      acct,
      ALL_SCOPES.filter((s) => s !== 'buckets:read' && s !== 'requests:write'),
    );
    const forbidden = await api(lacking).get(sdk + q);
    expect(forbidden.status).toBe(403);
    expect(errorOf(forbidden)).toMatchObject({
      code: 'FORBIDDEN',
      details: { requiredScope: 'buckets:read' },
    });
    const onlyRead = await tokenWithScopes(acct, ['buckets:read']);
    expect((await api(onlyRead).get(sdk + q)).status).toBe(200);
    const onlyIngest = await tokenWithScopes(acct, ['requests:write']);
    expect((await api(onlyIngest).get(sdk + q)).status).toBe(200);
    expect((await a.get(`/v1/buckets/bkt_doesnotexist/sdk${q}`)).status).toBe(404);
  });
});
