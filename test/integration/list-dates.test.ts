import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, waitFor } from '../helpers/client.js';

type List = { hasMore: boolean; records: { sid: string }[] };
type ErrorBody = {
  success: false;
  error: { code: string; message: string; details: Record<string, string> };
};

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The interface (docs/search.md): list endpoints accept `start_date` and `end_date` beside page, limit, sort and order.
 * Every list answers only what was created within the bounds (events: what happened within
 * them), and refuses a bound that is not a date-time, or a start after the end, with a 400.
 */
describe('list endpoints: start_date and end_date', () => {
  it('bound every list by creation time and refuse bad bounds', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const acc = `/v1/accounts/${acct.accountSid}`;
    const before = Date.now() - 1000;

    const created = async (path: string, body: Record<string, unknown>) => {
      const res = await a.post<{ sid: string }>(path, body);
      expect(res.status, res.text).toBe(201);
      return res.body.sid;
    };
    await created(`${acc}/apiTokens`, { name: 'ci', scopes: ['buckets:read'] });
    await created(`${acc}/mcpTokens`, { name: 'assistant', environmentSid: 'prod01' });
    await created(`${acc}/exclusions`, { name: 'preflight', pathPattern: '*', method: 'options' });
    await created(`${acc}/redactions`, { name: 'pw', fieldPath: '$..password', redactionType: 'mask' });
    await created(`${acc}/events`, { type: 'deployment', name: 'v1' });
    const wf = `${acc}/environments/prod01/buckets/${acct.bucketSid}/workflows`;
    const wfSid = await created(wf, {
      name: 'errors',
      trigger: { type: 'error', conditions: [{ statusCode: 500 }] },
      actions: [{ type: 'webhook', config: { url: 'https://hooks.example.test/in' } }],
    });
    await created(`${acc}/buckets/${acct.bucketSid}/streamViews`, { name: 'errors', criteria: 'status:5xx' });
    const sent = await ingest(acct.bucketSid, acct.apiToken, [makeRecord()]);
    expect(sent.status, sent.text).toBe(202);
    const requests = `${acc}/buckets/${acct.bucketSid}/requests`;
    await waitFor(async () => (await a.get<List>(requests)).body.records.length === 1, {
      what: 'the request stored',
    });
    const after = Date.now() + 1000;

    const lists = [
      `${acc}/buckets`,
      `${acc}/apiTokens`,
      `${acc}/mcpTokens`,
      `${acc}/exclusions`,
      `${acc}/redactions`,
      `${acc}/events`,
      `${acc}/workflows`,
      wf,
      `${acc}/buckets/${acct.bucketSid}/streamViews`,
      requests,
    ];
    for (const list of lists) {
      const all = await a.get<List>(`${list}?start_date=${iso(before)}&end_date=${iso(after)}`);
      expect(all.status, `${list}: ${all.text}`).toBe(200);
      expect(all.body.records.length, list).toBeGreaterThan(0);
      const later = await a.get<List>(`${list}?start_date=${iso(after)}`);
      expect(later.status, later.text).toBe(200);
      expect(later.body, `${list} after its records`).toEqual({ hasMore: false, records: [] });
      const earlier = await a.get<List>(`${list}?end_date=${iso(before)}`);
      expect(earlier.body, `${list} before its records`).toEqual({ hasMore: false, records: [] });

      const garbage = await a.get<ErrorBody>(`${list}?start_date=yesterday`);
      expect(garbage.status, list).toBe(400);
      expect(garbage.body.error.code).toBe('VALIDATION_ERROR');
      expect(Object.keys(garbage.body.error.details).join(), list).toMatch(/start_date/);
      const reversed = await a.get<ErrorBody>(`${list}?start_date=${iso(after)}&end_date=${iso(before)}`);
      expect(reversed.status, list).toBe(400);
      expect(reversed.body.error.code).toBe('VALIDATION_ERROR');
    }

    // A workflow's executions are bounded the same way (none has run, so only the refusals show).
    const executions = `${wf}/${wfSid}/executions`;
    expect((await a.get<List>(`${executions}?start_date=${iso(before)}`)).status).toBe(200);
    expect((await a.get<ErrorBody>(`${executions}?end_date=soon`)).status).toBe(400);
  });
});
