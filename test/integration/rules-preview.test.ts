import { describe, expect, it } from 'vitest';
import { api, ingest, listAllRequests, newAccount, waitFor, type HttpResult } from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

type Rec = Record<string, unknown>;
type ErrorBody = { error: { code: string; message: string; details: Record<string, unknown> } };
type RedactionPreview = {
  applies: boolean;
  changed: boolean;
  before: Rec & { request: Rec };
  after: Rec & { request: Rec };
  changes: { path: string; kind: string; before?: unknown; after?: unknown }[];
};
type ExclusionPreview = {
  excluded: boolean;
  applies: boolean;
  compared: { method: string; path: string; statusCode: number | null; environmentSid: string | null };
};

const errorOf = (res: HttpResult<unknown>) => (res.body as ErrorBody).error;

function expect400(res: HttpResult<unknown>, field: string): void {
  expect(res.status, res.text).toBe(400);
  expect(errorOf(res).code).toBe('VALIDATION_ERROR');
  expect(Object.keys(errorOf(res).details), res.text).toContain(field);
}

const sample = (over: Rec = {}): Rec => ({
  environmentSid: 'prod01',
  request: {
    method: 'POST',
    path: '/v1/payments?debug=1',
    headers: { authorization: 'Bearer secret-token', 'content-type': 'application/json' },
    body: JSON.stringify({ card: { number: '4111-1111-1111-1111', exp: '12/30' }, amount: 42 }),
  },
  response: { statusCode: 201, body: JSON.stringify({ ok: true }) },
  ...over,
});

/**
 * The rule previews (docs/rules.md, "Previewing a rule"): a draft rule applied to one record by the
 * processor's own code. The redaction preview is checked against what the processor stores for the
 * same record under the same (saved) rule; the exclusion preview against what it drops.
 */
describe('rule previews', () => {
  it('previews a redaction as the processor applies it, with the changed fields', async () => {
    const acct = await newAccount();
    const c = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}`;
    const rule = { fieldPath: '$.request.body.card.number', redactionType: 'mask' };

    const res = await c.post<RedactionPreview>(`${base}/redactions/preview`, { rule, record: sample() });
    expect(res.status, res.text).toBe(200);
    expect(res.body.applies).toBe(true);
    expect(res.body.changed).toBe(true);
    expect(res.body.changes).toEqual([
      {
        path: 'request.body.card.number',
        kind: 'changed',
        before: '4111-1111-1111-1111',
        after: '****-****-****-****',
      },
    ]);
    expect(JSON.parse(String(res.body.after.request.body))).toEqual({
      card: { number: '****-****-****-****', exp: '12/30' },
      amount: 42,
    });
    // The record "before" is what ingest makes of the sample: server fields filled in.
    expect(res.body.before).toMatchObject({ direction: 'in', environmentSid: 'prod01' });

    // Saved and sent through the pipeline, the same record is stored exactly as previewed.
    const saved = await c.post(`${base}/redactions`, { name: 'card', ...rule });
    expect(saved.status, saved.text).toBe(201);
    // The processor picks up rule changes by NOTIFY; a record sent right away may precede it.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await ingest(acct.bucketSid, acct.apiToken, [sample()])).status).toBe(202);
    const stored = await waitFor(
      async () => {
        const all = await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid);
        return all[0];
      },
      { timeoutMs: 30_000, what: 'the stored request' },
    );
    const storedRequest = stored.request as Rec;
    expect(storedRequest.body).toBe(res.body.after.request.body);

    // Every type: remove drops the field, replace puts the value, hash a SHA-256.
    const removed = await c.post<RedactionPreview>(`${base}/redactions/preview`, {
      rule: { fieldPath: '$.request.headers.Authorization', redactionType: 'remove' },
      record: sample(),
    });
    expect(removed.body.changes).toEqual([
      { path: 'request.headers.authorization', kind: 'removed', before: 'Bearer secret-token' },
    ]);
    const replaced = await c.post<RedactionPreview>(`${base}/redactions/preview`, {
      rule: { fieldPath: '$..amount', redactionType: 'replace', replacementValue: 'X' },
      record: sample(),
    });
    expect(replaced.body.changes).toEqual([
      { path: 'request.body.amount', kind: 'changed', before: 42, after: 'X' },
    ]);
    const hashed = await c.post<RedactionPreview>(`${base}/redactions/preview`, {
      rule: { fieldPath: '$.request.queryString.debug', redactionType: 'hash' },
      record: sample(),
    });
    expect(hashed.body.changes.map((x) => x.path)).toContain('request.path');

    // A rule limited to another environment does not apply: nothing changes.
    const scoped = await c.post<RedactionPreview>(`${base}/redactions/preview`, {
      rule: { ...rule, environments: ['stag01'] },
      record: sample(),
    });
    expect([scoped.body.applies, scoped.body.changed, scoped.body.changes]).toEqual([false, false, []]);
    // A record without an environment may be any environment's: the same rule applies to it.
    const unscoped = await c.post<RedactionPreview>(`${base}/redactions/preview`, {
      rule: { ...rule, environments: ['stag01'] },
      record: sample({ environmentSid: null }),
    });
    expect(unscoped.status, unscoped.text).toBe(200);
    expect([unscoped.body.applies, unscoped.body.changed]).toEqual([true, true]);
    // A field the record does not have: applies, changes nothing.
    const absent = await c.post<RedactionPreview>(`${base}/redactions/preview`, {
      rule: { fieldPath: '$..ssn', redactionType: 'mask' },
      record: sample(),
    });
    expect([absent.body.applies, absent.body.changed]).toEqual([true, false]);
  }, 90_000);

  it('validates the draft and the sample as the rules API and ingest do', async () => {
    const acct = await newAccount();
    const c = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}`;
    expect400(
      await c.post(`${base}/redactions/preview`, {
        rule: { fieldPath: '$.request.method', redactionType: 'mask' },
        record: sample(),
      }),
      'body.rule.fieldPath',
    );
    expect400(
      await c.post(`${base}/redactions/preview`, {
        rule: { fieldPath: '$.a', redactionType: 'replace' },
        record: sample(),
      }),
      'body.rule.replacementValue',
    );
    expect400(
      await c.post(`${base}/redactions/preview`, {
        rule: { fieldPath: '$.a', redactionType: 'scramble' },
        record: sample(),
      }),
      'body.rule.redactionType',
    );
    expect400(
      await c.post(`${base}/exclusions/preview`, {
        rule: { pathPattern: 'no slash', method: 'GET' },
        record: sample(),
      }),
      'body.rule.pathPattern',
    );
    expect400(
      await c.post(`${base}/exclusions/preview`, {
        rule: { pathPattern: '/x', method: 'GET' },
        record: { request: { method: 'GET' }, environmentSid: 'NOT VALID' },
      }),
      'body.record.environmentSid',
    );
    expect400(
      await c.post(`${base}/exclusions/preview`, { rule: { pathPattern: '/x', method: 'GET' } }),
      'body.record',
    );
    expect400(
      await c.post(`${base}/exclusions/preview`, {
        rule: { pathPattern: '/x', method: 'GET' },
        requestSid: 'req_x',
      }),
      'body.bucketSid',
    );
  });

  it('previews an exclusion: which records the processor would drop', async () => {
    const acct = await newAccount();
    const c = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}`;
    const rule = { pathPattern: '/health*', method: 'get' };
    const health = sample({
      request: { method: 'GET', path: '/health/live?verbose=1' },
      response: { statusCode: 200 },
    });
    const yes = await c.post<ExclusionPreview>(`${base}/exclusions/preview`, { rule, record: health });
    expect(yes.status, yes.text).toBe(200);
    expect(yes.body).toMatchObject({
      excluded: true,
      applies: true,
      compared: { method: 'GET', path: '/health/live', statusCode: 200, environmentSid: 'prod01' },
    });
    const post = sample({ request: { method: 'POST', path: '/health' } });
    expect(
      (await c.post<ExclusionPreview>(`${base}/exclusions/preview`, { rule, record: post })).body.excluded,
    ).toBe(false);
    const status = await c.post<ExclusionPreview>(`${base}/exclusions/preview`, {
      rule: { ...rule, statusCode: 503 },
      record: health,
    });
    expect(status.body.excluded).toBe(false);
    const otherEnv = await c.post<ExclusionPreview>(`${base}/exclusions/preview`, {
      rule: { ...rule, environments: ['stag01'] },
      record: health,
    });
    expect([otherEnv.body.applies, otherEnv.body.excluded]).toEqual([false, false]);
    // Bucket scope: checked when the preview names a bucket.
    const second = await c.post<{ sid: string }>(`${base}/buckets`, { name: 'second' });
    const inOther = await c.post<ExclusionPreview>(`${base}/exclusions/preview`, {
      rule: { ...rule, buckets: [second.body.sid] },
      record: health,
      bucketSid: acct.bucketSid,
    });
    expect([inOther.body.applies, inOther.body.excluded]).toEqual([false, false]);
    const inSame = await c.post<ExclusionPreview>(`${base}/exclusions/preview`, {
      rule: { ...rule, buckets: [second.body.sid] },
      record: health,
      bucketSid: second.body.sid,
    });
    expect(inSame.body.excluded).toBe(true);
  });

  it('previews on a stored request with requests:read, and guards scopes and accounts', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}`;
    expect((await ingest(acct.bucketSid, acct.apiToken, [sample()])).status).toBe(202);
    const stored = await waitFor(
      async () => (await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid))[0],
      { timeoutMs: 30_000, what: 'the stored request' },
    );
    const body = {
      rule: { fieldPath: '$..number', redactionType: 'mask' },
      bucketSid: acct.bucketSid,
      requestSid: String(stored.sid),
    };
    const rulesOnly = await tokenWithScopes(acct, ['redactions:read', 'exclusions:read']);
    const both = await tokenWithScopes(acct, ['redactions:read', 'requests:read']);
    const ok = await api(both).post<RedactionPreview>(`${base}/redactions/preview`, body);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.changes.map((x) => [x.path, x.after])).toEqual([
      ['request.body.card.number', '****-****-****-****'],
    ]);
    expect(ok.body.before.sid).toBe(stored.sid);

    const noRead = await api(rulesOnly).post(`${base}/redactions/preview`, body);
    expect([noRead.status, errorOf(noRead).details.requiredScope]).toEqual([403, 'requests:read']);
    // A pasted record needs only the rules' read scope.
    const pasted = await api(rulesOnly).post(`${base}/redactions/preview`, {
      rule: body.rule,
      record: sample(),
    });
    expect(pasted.status).toBe(200);
    const exNoScope = await api(both).post(`${base}/exclusions/preview`, {
      rule: { pathPattern: '*', method: '*' },
      record: sample(),
    });
    expect([exNoScope.status, errorOf(exNoScope).details.requiredScope]).toEqual([403, 'exclusions:read']);
    const missing = await api(both).post(`${base}/redactions/preview`, {
      ...body,
      requestSid: 'req_missing',
    });
    expect(missing.status).toBe(404);
    // Another account: its path is a 404; its own path cannot reach this account's request.
    expect((await api(other.apiToken).post(`${base}/redactions/preview`, body)).status).toBe(404);
    const own = await api(other.apiToken).post(`/v1/accounts/${other.accountSid}/redactions/preview`, body);
    expect(own.status).toBe(404);
    expect((await api().post(`${base}/redactions/preview`, body)).status).toBe(401);
  }, 90_000);
});
