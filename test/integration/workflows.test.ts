import { describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../services/shared/credentials.js';
import { newSid } from '../../services/shared/ids.js';
import {
  api,
  http,
  newAccount,
  testEnv,
  testPool,
  type HttpResult,
  type TestAccount,
} from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

type Rec = Record<string, unknown> & { sid: string };
type List<T = Rec> = { hasMore: boolean; records: T[] };
type ErrorBody = {
  success: false;
  error: { code: string; message: string; details: Record<string, string> };
};

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ENV = 'prod01';
const errorOf = (res: HttpResult<unknown>) => (res.body as ErrorBody).error;

function expect400(res: HttpResult<unknown>, field: string): string {
  expect(res.status, res.text).toBe(400);
  const err = errorOf(res);
  expect(err.code).toBe('VALIDATION_ERROR');
  expect(Object.keys(err.details), res.text).toContain(field);
  return err.details[field]!;
}

const wfPath = (acct: TestAccount, env = ENV, bucket = acct.bucketSid) =>
  `/v1/accounts/${acct.accountSid}/environments/${env}/buckets/${bucket}/workflows`;

const webhook = { type: 'webhook', config: { url: 'https://hooks.example.test/in' } };
const errorWorkflow = {
  name: 'Alert on 500s',
  description: 'page the on-call',
  trigger: { type: 'error', conditions: [{ statusCode: 500, path: '/api/*' }] },
  actions: [webhook],
};

describe('workflows', () => {
  it('creates a workflow of each trigger type with each action type, applying defaults', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = wfPath(acct);

    const created = await a.post<Rec>(base, errorWorkflow);
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      sid: expect.stringMatching(/^wfl_[A-Za-z0-9]{27}$/),
      accountSid: acct.accountSid,
      environmentSid: ENV,
      bucketSid: acct.bucketSid,
      name: 'Alert on 500s',
      description: 'page the on-call',
      trigger: { type: 'error', conditions: [{ statusCode: 500, path: '/api/*' }] },
      actions: [
        { type: 'webhook', config: { url: 'https://hooks.example.test/in', method: 'POST' }, order: 0 },
      ],
      isActive: true,
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: null,
    });

    const request = await a.post<Rec>(base, {
      name: 'Signups',
      trigger: { type: 'request', conditions: [{ path: '/signup', method: 'post', statusCode: 201 }] },
      actions: [
        {
          type: 'email',
          config: { to: ['ops@example.test'], subject: 'New signup', body: '{{request.body}}' },
          order: 2,
        },
        {
          type: 'chat',
          config: {
            webhook_url: 'https://chat.example.test/h',
            channel: '#ops',
            message: 'hi',
            username: 'bot',
          },
          order: 1,
        },
        {
          type: 'webhook',
          config: { url: 'http://127.0.0.1:9/x', method: 'put', headers: { 'x-k': 'v' }, body: { a: 1 } },
        },
      ],
      isActive: false,
    });
    expect(request.status, request.text).toBe(201);
    expect(request.body).toMatchObject({
      description: '',
      isActive: false,
      trigger: { type: 'request', conditions: [{ path: '/signup', method: 'POST', statusCode: 201 }] },
      actions: [
        { type: 'email', order: 2 },
        { type: 'chat', order: 1 },
        // Header values are secrets: masked in every answer (docs/security.md "Secrets at rest").
        { type: 'webhook', order: 0, config: { method: 'PUT', headers: { 'x-k': '****' }, body: { a: 1 } } },
      ],
    });

    const threshold = await a.post<Rec>(base, {
      name: 'Slow',
      trigger: {
        type: 'threshold',
        conditions: [
          { metric: 'avg_response_time', operator: 'greater_than_or_equal', value: 250.5, timeWindow: '5m' },
        ],
      },
      actions: [
        {
          type: 'automation',
          config: { flow_id: 'flow-1', webhook_url: 'https://auto.example.test/f', data: { k: 1 } },
        },
      ],
    });
    expect(threshold.status, threshold.text).toBe(201);
    expect(threshold.body.trigger).toEqual({
      type: 'threshold',
      conditions: [
        { metric: 'avg_response_time', operator: 'greater_than_or_equal', value: 250.5, timeWindow: '5m' },
      ],
    });

    const schedule = await a.post<Rec>(base, {
      name: 'Daily digest',
      trigger: { type: 'schedule', schedule: '0 9 * * 1-5' },
      actions: [{ type: 'email', config: { to: ['team@example.test'] } }],
    });
    expect(schedule.status, schedule.text).toBe(201);
    expect(schedule.body.trigger).toEqual({ type: 'schedule', conditions: [], schedule: '0 9 * * 1-5' });

    const classes = await a.post<Rec>(base, {
      name: 'Server errors',
      trigger: { type: 'error', conditions: [{ statusCode: '5xx' }] },
      actions: [{ type: 'automation', config: { flow_id: 42, webhook_url: 'https://auto.example.test/f' } }],
    });
    expect(classes.status, classes.text).toBe(201);
    expect(classes.body.trigger).toEqual({ type: 'error', conditions: [{ statusCode: '5xx' }] });
    const zoned = await a.post<Rec>(base, {
      name: 'Berlin mornings',
      trigger: { type: 'schedule', schedule: '0 8 * * *', timezone: 'Europe/Berlin' },
      actions: [webhook],
    });
    expect(zoned.status, zoned.text).toBe(201);
    expect(zoned.body.trigger).toEqual({
      type: 'schedule',
      conditions: [],
      schedule: '0 8 * * *',
      timezone: 'Europe/Berlin',
    });

    const bare = await a.post<Rec>(base, {
      name: 'Every request',
      trigger: { type: 'request' },
      actions: [webhook],
    });
    expect(bare.status).toBe(201);
    expect(bare.body.trigger).toEqual({ type: 'request', conditions: [] });
  });

  it('rejects invalid triggers and actions with details naming the field', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = wfPath(acct);
    const withTrigger = (trigger: unknown) => a.post(base, { ...errorWorkflow, trigger });
    const withAction = (action: unknown) => a.post(base, { ...errorWorkflow, actions: [action] });
    const threshold = { metric: 'error_rate', operator: 'greater_than', value: 5, timeWindow: '5m' };

    expect400(await a.post(base, { ...errorWorkflow, name: undefined }), 'body.name');
    expect400(await a.post(base, { ...errorWorkflow, name: '' }), 'body.name');
    expect400(await a.post(base, { name: 'x', actions: [webhook] }), 'body.trigger');
    expect400(await a.post(base, { name: 'x', trigger: errorWorkflow.trigger }), 'body.actions');
    expect400(await a.post(base, { ...errorWorkflow, extra: 1 }), 'body.extra');
    expect400(await a.post(base, { ...errorWorkflow, isActive: 'yes' }), 'body.isActive');

    expect400(await withTrigger({ type: 'cron' }), 'body.trigger.type');
    expect400(
      await withTrigger({ type: 'request', conditions: [{ method: 'FETCH' }] }),
      'body.trigger.conditions.0.method',
    );
    expect400(
      await withTrigger({ type: 'request', conditions: [{ pathx: '/a' }] }),
      'body.trigger.conditions.0.pathx',
    );
    expect400(
      await withTrigger({ type: 'request', conditions: [{ path: 'no-slash' }] }),
      'body.trigger.conditions.0.path',
    );
    expect400(
      await withTrigger({ type: 'error', conditions: [{ statusCode: 200 }] }),
      'body.trigger.conditions.0.statusCode',
    );
    expect400(await withTrigger({ type: 'threshold' }), 'body.trigger.conditions');
    expect400(await withTrigger({ type: 'threshold', conditions: [] }), 'body.trigger.conditions');
    expect400(
      await withTrigger({ type: 'threshold', conditions: [{ ...threshold, metric: 'p42' }] }),
      'body.trigger.conditions.0.metric',
    );
    expect400(
      await withTrigger({ type: 'threshold', conditions: [{ ...threshold, operator: 'above' }] }),
      'body.trigger.conditions.0.operator',
    );
    for (const timeWindow of ['5', '0m', '05m', '5w', 'm5', '5 m'])
      expect400(
        await withTrigger({ type: 'threshold', conditions: [{ ...threshold, timeWindow }] }),
        'body.trigger.conditions.0.timeWindow',
      );
    // Bodies are not type-coerced: "5" is not a number.
    expect400(
      await withTrigger({ type: 'threshold', conditions: [{ ...threshold, value: '5' }] }),
      'body.trigger.conditions.0.value',
    );
    const { timeWindow: _omit, ...noWindow } = threshold;
    expect400(
      await withTrigger({ type: 'threshold', conditions: [noWindow] }),
      'body.trigger.conditions.0.timeWindow',
    );
    expect(
      expect400(
        await withTrigger({ type: 'threshold', conditions: [{ ...threshold, timeWindow: '31d' }] }),
        'body.trigger.conditions.0.timeWindow',
      ),
    ).toBe('must be at most 30 days');
    expect400(
      await withTrigger({ type: 'error', conditions: [{ statusCode: '2xx' }] }),
      'body.trigger.conditions.0.statusCode',
    );
    expect400(
      await withTrigger({ type: 'request', conditions: [{ statusCode: '9xx' }] }),
      'body.trigger.conditions.0.statusCode',
    );
    expect400(
      await withTrigger({ type: 'schedule', schedule: '* * * * *', timezone: 'Mars/Olympus' }),
      'body.trigger.timezone',
    );
    expect400(await withTrigger({ type: 'request', timezone: 'UTC' }), 'body.trigger.timezone');
    expect400(await withTrigger({ type: 'schedule' }), 'body.trigger.schedule');
    expect(
      expect400(await withTrigger({ type: 'schedule', schedule: '61 * * * *' }), 'body.trigger.schedule'),
    ).toContain('is not a valid cron expression');
    expect400(await withTrigger({ type: 'schedule', schedule: 'every day' }), 'body.trigger.schedule');
    expect400(await withTrigger({ type: 'request', schedule: '* * * * *' }), 'body.trigger.schedule');

    expect400(await a.post(base, { ...errorWorkflow, actions: [] }), 'body.actions');
    expect400(await a.post(base, { ...errorWorkflow, actions: Array(21).fill(webhook) }), 'body.actions');
    expect400(await withAction({ type: 'sms', config: {} }), 'body.actions.0.type');
    expect400(await withAction({ type: 'webhook' }), 'body.actions.0.config');
    expect400(await withAction({ type: 'webhook', config: {} }), 'body.actions.0.config.url');
    expect400(
      await withAction({ type: 'webhook', config: { url: 'ftp://x.test/a' } }),
      'body.actions.0.config.url',
    );
    expect400(
      await withAction({ type: 'webhook', config: { url: 'not a url' } }),
      'body.actions.0.config.url',
    );
    expect400(
      await withAction({ ...webhook, config: { ...webhook.config, method: 'BREW' } }),
      'body.actions.0.config.method',
    );
    expect400(
      await withAction({ ...webhook, config: { ...webhook.config, headers: { a: 1 } } }),
      'body.actions.0.config.headers.a',
    );
    expect400(
      await withAction({ ...webhook, config: { ...webhook.config, body: 'text' } }),
      'body.actions.0.config.body',
    );
    expect400(
      await withAction({ ...webhook, config: { ...webhook.config, secret: 's' } }),
      'body.actions.0.config.secret',
    );
    expect400(await withAction({ ...webhook, order: 'first' }), 'body.actions.0.order');
    expect400(await withAction({ type: 'email', config: {} }), 'body.actions.0.config.to');
    expect400(await withAction({ type: 'email', config: { to: [] } }), 'body.actions.0.config.to');
    expect400(
      await withAction({ type: 'email', config: { to: ['not-an-address'] } }),
      'body.actions.0.config.to.0',
    );
    expect400(
      await withAction({ type: 'chat', config: { channel: '#x' } }),
      'body.actions.0.config.webhook_url',
    );
    expect400(
      await withAction({ type: 'automation', config: { webhook_url: 'https://a.test/f' } }),
      'body.actions.0.config.flow_id',
    );
    expect400(
      await withAction({ type: 'automation', config: { flow_id: 'f' } }),
      'body.actions.0.config.webhook_url',
    );
    expect400(
      await withAction({
        type: 'automation',
        config: { flow_id: 'f', webhook_url: 'https://a.test/f', data: [] },
      }),
      'body.actions.0.config.data',
    );
    // Nothing of the above was stored.
    expect((await a.get<List>(base)).body.records).toEqual([]);
  });

  it('lists, gets, replaces and deletes workflows; the account-wide list filters', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const bucket2 = (await a.post<Rec>(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'b2' })).body.sid;
    const base = wfPath(acct);
    const w1 = (await a.post<Rec>(base, { ...errorWorkflow, name: 'a' })).body;
    const w2 = (await a.post<Rec>(base, { ...errorWorkflow, name: 'b', isActive: false })).body;
    const w3 = (await a.post<Rec>(wfPath(acct, 'stage1'), { ...errorWorkflow, name: 'c' })).body;
    const w4 = (await a.post<Rec>(wfPath(acct, ENV, bucket2), { ...errorWorkflow, name: 'd' })).body;

    const scoped = await a.get<List>(`${base}?sort=name&order=asc`);
    expect(scoped.status).toBe(200);
    expect(scoped.body).toEqual({ hasMore: false, records: [w1, w2] });
    const page = await a.get<List>(`${base}?sort=name&order=asc&limit=1&page=2`);
    expect(page.body).toEqual({ hasMore: false, records: [w2] });
    expect((await a.get<List>(`${base}?isActive=true`)).body.records).toEqual([w1]);
    expect400(await a.get(`${base}?sort=trigger`), 'querystring.sort');

    const all = `/v1/accounts/${acct.accountSid}/workflows`;
    const sids = async (q: string) =>
      (await a.get<List>(`${all}?sort=name&order=asc${q}`)).body.records.map((w) => w.sid);
    expect(await sids('')).toEqual([w1.sid, w2.sid, w3.sid, w4.sid]);
    expect(await sids(`&bucketSid=${bucket2}`)).toEqual([w4.sid]);
    expect(await sids('&environmentSid=stage1')).toEqual([w3.sid]);
    expect(await sids(`&environmentSid=${ENV}&bucketSid=${acct.bucketSid}&isActive=false`)).toEqual([w2.sid]);
    const limited = await a.get<List>(`${all}?limit=3`);
    expect(limited.body.hasMore).toBe(true);
    expect400(await a.get(`${all}?environmentSid=BAD`), 'querystring.environmentSid');
    expect400(await a.get(`${all}?limit=101`), 'querystring.limit');

    const one = await a.get(`${base}/${w1.sid}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(w1);
    // The workflow exists, but not under another environment or bucket path.
    expect((await a.get(`${wfPath(acct, 'stage1')}/${w1.sid}`)).status).toBe(404);
    expect((await a.get(`${wfPath(acct, ENV, bucket2)}/${w1.sid}`)).status).toBe(404);

    const put = await a.put<Rec>(`${base}/${w1.sid}`, {
      name: 'a2',
      trigger: { type: 'schedule', schedule: '*/5 * * * *' },
      actions: [{ type: 'chat', config: { webhook_url: 'https://chat.example.test/h' }, order: 3 }],
      isActive: false,
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual({
      ...w1,
      name: 'a2',
      description: '',
      trigger: { type: 'schedule', conditions: [], schedule: '*/5 * * * *' },
      actions: [{ type: 'chat', config: { webhook_url: 'https://chat.example.test/h' }, order: 3 }],
      isActive: false,
      updatedAt: expect.stringMatching(ISO_MS),
    });
    expect400(await a.put(`${base}/${w1.sid}`, { ...errorWorkflow }), 'body.isActive');
    expect400(
      await a.put(`${base}/${w1.sid}`, { ...errorWorkflow, isActive: true, trigger: { type: 'x' } }),
      'body.trigger.type',
    );

    const del = await a.delete(`${base}/${w2.sid}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ sid: w2.sid, deleted: true });
    expect((await a.get(`${base}/${w2.sid}`)).status).toBe(404);
    expect((await a.delete(`${base}/${w2.sid}`)).status).toBe(404);
    expect((await a.get(`${base}/wfl_short`)).status).toBe(404);
  });

  it('lists executions newest first, paginated and filtered by status', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = wfPath(acct);
    const wf = (await a.post<Rec>(base, errorWorkflow)).body;
    const t0 = Date.parse('2026-11-20T12:00:00.000Z');
    const rows = [
      { status: 'succeeded', attempts: 1, error: null, requestSid: newSid('request'), at: t0 },
      { status: 'failed', attempts: 3, error: 'HTTP 500 from target', requestSid: null, at: t0 + 60_000 },
      { status: 'pending', attempts: 0, error: null, requestSid: newSid('request'), at: t0 + 120_000 },
    ];
    const sids: string[] = [];
    for (const r of rows) {
      const sid = newSid('execution');
      sids.push(sid);
      await testPool().query(
        `INSERT INTO workflow_executions (sid, account_sid, workflow_sid, bucket_sid, trigger_type, request_sid,
           status, attempts, error, created_at, started_at, finished_at)
         VALUES ($1, $2, $3, $4, 'error', $5, $6, $7, $8, $9, $10, $11)`,
        [
          sid,
          acct.accountSid,
          wf.sid,
          acct.bucketSid,
          r.requestSid,
          r.status,
          r.attempts,
          r.error,
          new Date(r.at),
          r.status === 'pending' ? null : new Date(r.at + 100),
          r.status === 'pending' ? null : new Date(r.at + 900),
        ],
      );
    }
    const exec = `${base}/${wf.sid}/executions`;
    const first = await a.get<List>(`${exec}?limit=2`);
    expect(first.status, first.text).toBe(200);
    expect(first.body.hasMore).toBe(true);
    expect(first.body.records).toEqual([
      {
        sid: sids[2],
        workflowSid: wf.sid,
        triggerType: 'error',
        requestSid: rows[2]!.requestSid,
        status: 'pending',
        attempts: 0,
        error: null,
        createdAt: '2026-11-20T12:02:00.000Z',
        startedAt: null,
        finishedAt: null,
      },
      {
        sid: sids[1],
        workflowSid: wf.sid,
        triggerType: 'error',
        requestSid: null,
        status: 'failed',
        attempts: 3,
        error: 'HTTP 500 from target',
        createdAt: '2026-11-20T12:01:00.000Z',
        startedAt: '2026-11-20T12:01:00.100Z',
        finishedAt: '2026-11-20T12:01:00.900Z',
      },
    ]);
    const second = await a.get<List>(`${exec}?limit=2&page=2`);
    expect(second.body).toMatchObject({ hasMore: false, records: [{ sid: sids[0], status: 'succeeded' }] });
    expect((await a.get<List>(`${exec}?status=failed`)).body.records.map((r) => r.sid)).toEqual([sids[1]]);
    expect400(await a.get(`${exec}?status=exploded`), 'querystring.status');
    expect((await a.get(`${base}/wfl_${'x'.repeat(27)}/executions`)).status).toBe(404);
  });

  it('404s a malformed environment, an unknown or foreign bucket and another account', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const a = api(acct.apiToken);
    for (const env of ['PROD01', 'prod', 'prod0011', 'pr-d01']) {
      const res = await a.post(wfPath(acct, env), errorWorkflow);
      expect(res.status, env).toBe(404);
      expect(errorOf(res).code).toBe('RESOURCE_NOT_FOUND');
      expect((await a.get(wfPath(acct, env))).status).toBe(404);
    }
    expect((await a.post(wfPath(acct, ENV, other.bucketSid), errorWorkflow)).status).toBe(404);
    expect((await a.get(wfPath(acct, ENV, other.bucketSid))).status).toBe(404);
    expect((await a.post(wfPath(acct, ENV, 'bkt_nope'), errorWorkflow)).status).toBe(404);
  });

  it('guards every workflow endpoint (401, 403, 404 for another account)', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const base = wfPath(acct);
    const body = { ...errorWorkflow, isActive: true };
    const sid = (await api(acct.apiToken).post<Rec>(base, body)).body.sid;
    const calls: {
      method: 'GET' | 'POST' | 'PUT' | 'DELETE';
      path: string;
      body?: unknown;
      scope: string;
    }[] = [
      { method: 'GET', path: `/v1/accounts/${acct.accountSid}/workflows`, scope: 'workflows:read' },
      { method: 'GET', path: base, scope: 'workflows:read' },
      { method: 'POST', path: base, body, scope: 'workflows:write' },
      { method: 'GET', path: `${base}/${sid}`, scope: 'workflows:read' },
      { method: 'GET', path: `${base}/${sid}/executions`, scope: 'workflows:read' },
      { method: 'PUT', path: `${base}/${sid}`, body, scope: 'workflows:write' },
      { method: 'DELETE', path: `${base}/${sid}`, scope: 'workflows:delete' },
    ];
    const lacking = Object.fromEntries(
      await Promise.all(
        ['workflows:read', 'workflows:write', 'workflows:delete'].map(
          async (s) =>
            [
              s,
              await tokenWithScopes(
                acct,
                ALL_SCOPES.filter((x) => x !== s),
              ),
            ] as const,
        ),
      ),
    );
    for (const call of calls) {
      const url = testEnv().apiUrl + call.path;
      const what = `${call.method} ${call.path}`;
      const none = await http(call.method, url, { body: call.body });
      expect(none.status, what).toBe(401);
      expect(errorOf(none).code).toBe('INVALID_TOKEN');
      const bad = await http(call.method, url, { body: call.body, token: 'at_test_' + 'y'.repeat(40) });
      expect(bad.status, what).toBe(401);
      const forbidden = await http(call.method, url, { body: call.body, token: lacking[call.scope] });
      expect(forbidden.status, what).toBe(403);
      expect(errorOf(forbidden)).toMatchObject({ code: 'FORBIDDEN', details: { requiredScope: call.scope } });
      const foreign = await http(call.method, url, { body: call.body, token: other.apiToken });
      expect(foreign.status, what).toBe(404);
      expect(errorOf(foreign).code).toBe('RESOURCE_NOT_FOUND');
    }
    // The other account's own paths with this account's bucket or workflow: 404 as well.
    const theirs = api(other.apiToken);
    const theirBase = wfPath(other, ENV, acct.bucketSid);
    expect((await theirs.get(`${theirBase}/${sid}`)).status).toBe(404);
    expect((await theirs.put(`${theirBase}/${sid}`, body)).status).toBe(404);
    expect((await theirs.delete(`${theirBase}/${sid}`)).status).toBe(404);
    expect((await theirs.get(`${wfPath(other)}/${sid}`)).status).toBe(404);
    expect((await theirs.get<List>(`/v1/accounts/${other.accountSid}/workflows`)).body.records).toEqual([]);
    expect((await api(acct.apiToken).get(`${base}/${sid}`)).status).toBe(200);
  });
});
