import { describe, expect, it } from 'vitest';
import { compileProcessorRules } from '../../services/processor/compiled-rules.js';
import { runSteps, type StoredRecord } from '../../services/processor/pipeline.js';
import { emptyRules, type WorkflowRule } from '../../services/processor/rule-snapshot.js';
import { endpointTemplate } from '../../services/processor/steps/endpoint.step.js';
import { PROCESSOR_STEPS } from '../../services/processor/steps/index.js';
import { compileConditions, executionSidFor } from '../../services/processor/triggers.js';
import { isSid } from '../../services/shared/ids.js';
import { validator } from '../../services/shared/schemas.js';

const facts = (method: string, path: string, statusCode: number | null, consumer = '', group = '') => ({
  method,
  path,
  statusCode,
  consumer,
  group,
});

describe('trigger conditions', () => {
  it('an empty list matches every request', () => {
    expect(compileConditions([])(facts('GET', '/x', 200))).toBe(true);
  });
  it('every given field of every condition must match', () => {
    const c = compileConditions([{ path: '/orders/*', method: 'post' }, { statusCode: 201 }]);
    expect(c(facts('POST', '/orders/1', 201))).toBe(true);
    expect(c(facts('POST', '/orders/1', 200))).toBe(false);
    expect(c(facts('GET', '/orders/1', 201))).toBe(false);
    expect(c(facts('POST', '/order/1', 201))).toBe(false);
  });
  it("consumer and group match the record's consumer exactly", () => {
    const c = compileConditions([{ consumer: 'cus_1' }, { group: 'gold' }]);
    expect(c(facts('GET', '/', 200, 'cus_1', 'gold'))).toBe(true);
    expect(c(facts('GET', '/', 200, 'cus_1', 'silver'))).toBe(false);
    expect(c(facts('GET', '/', 200, 'cus_10', 'gold'))).toBe(false);
    expect(c(facts('GET', '/', 200))).toBe(false);
  });
  it('status classes and method `*`', () => {
    const c = compileConditions([{ statusCode: '5xx', method: '*' }]);
    expect(c(facts('DELETE', '/', 503))).toBe(true);
    expect(c(facts('DELETE', '/', 404))).toBe(false);
    expect(c(facts('DELETE', '/', null))).toBe(false);
  });
});

const wf = (p: Partial<WorkflowRule>): WorkflowRule => ({
  sid: 'wfl_1',
  accountSid: 'acc_1',
  environmentSid: 'prod01',
  bucketSid: 'bkt_1',
  name: 'w',
  description: '',
  trigger: { type: 'request', conditions: [] },
  actions: [],
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: null,
  ...p,
});

function rec(status: number, env: string | null = 'prod01'): StoredRecord {
  return {
    sid: 'req_AAAAAAAAAAAAAAAAAAAAAAAAAAA',
    accountSid: 'acc_1',
    bucketSid: 'bkt_1',
    environmentSid: env,
    createdAt: '2026-11-01T00:00:00.000Z',
    receivedAt: '2026-11-01T00:00:00.000Z',
    request: {
      method: 'GET',
      path: '/users/42?x=1',
      headers: { a: '1' },
      body: '{"p":1}',
      queryString: { x: '1' },
    },
    response: { statusCode: status, headers: {}, body: null, size: 10 },
    timings: { duration: 7 },
  };
}

describe('triggers step', () => {
  const rules = (ws: WorkflowRule[]) => {
    const r = { ...emptyRules('acc_1', 'Acme'), workflows: ws };
    r.bucketNames.set('bkt_1', 'main');
    return compileProcessorRules(r).forBucket('bkt_1');
  };
  const run = (r: StoredRecord, ws: WorkflowRule[]) =>
    runSteps(r, { accountSid: 'acc_1', bucketSid: 'bkt_1', rules: rules(ws) }, PROCESSOR_STEPS);

  it('error triggers fire only for status >= 400; request triggers for every match', () => {
    const ws = [
      wf({ sid: 'wfl_req', trigger: { type: 'request', conditions: [{ path: '/users/*' }] } }),
      wf({ sid: 'wfl_err', trigger: { type: 'error', conditions: [] } }),
      wf({ sid: 'wfl_thr', trigger: { type: 'threshold', conditions: [] } }),
      wf({ sid: 'wfl_oth', environmentSid: 'stag01' }),
      wf({ sid: 'wfl_bkt', bucketSid: 'bkt_2' }),
    ];
    const ok = run(rec(200), ws);
    const bad = run(rec(502), ws);
    if (ok.kind !== 'ok' || bad.kind !== 'ok') throw new Error('expected ok');
    expect(ok.jobs?.map((j) => j.workflowSid)).toEqual(['wfl_req']);
    expect(bad.jobs?.map((j) => j.workflowSid)).toEqual(['wfl_req', 'wfl_err']);
    expect(bad.record.workflowExecutions).toEqual(
      bad.jobs!.map((j) => ({
        sid: j.executionSid,
        workflowSid: j.workflowSid,
        triggerType: j.trigger.type,
      })),
    );
    const job = bad.jobs![1]!;
    expect(validator('actionJob')(job)).toBe(true);
    expect(job.context).toMatchObject({
      request: { method: 'GET', path: '/users/42?x=1', query: { x: '1' } },
      response: { statusCode: 502, size: 10 },
      timings: { duration: 7, responseTime: 7 },
      bucket: { sid: 'bkt_1', name: 'main' },
      account: { name: 'Acme' },
      environment: { name: 'prod01' },
    });
    // No hit: no workflowExecutions field is added (the API answers a stored record without it
    // with null).
    const none = run(rec(200), []);
    expect(none.kind === 'ok' && Object.hasOwn(none.record, 'workflowExecutions')).toBe(false);
  });

  it('execution sids are valid and stable per (request, workflow)', () => {
    const a = executionSidFor('req_1', 'wfl_1');
    expect(isSid('execution', a)).toBe(true);
    expect(executionSidFor('req_1', 'wfl_1')).toBe(a);
    expect(executionSidFor('req_1', 'wfl_2')).not.toBe(a);
  });
});

describe('endpoint templates', () => {
  const cases: [string, string][] = [
    ['/users/123/orders/9f8e7d6c5b4a3928', '/users/{id}/orders/{id}'],
    ['/items/3fa85f64-5717-4562-b3fc-2c963f66afa6/x', '/items/{id}/x'],
    ['/commits/a1b2c3d', '/commits/{id}'],
    ['/req/req_Ab3dE5gH7jK9mN1pQ3sT5vX7zA9', '/req/{id}'],
    ['/customers/cus_NffrFeUf1V2Hib', '/customers/{id}'],
    ['/ulid/01ARZ3NDEKTSV4RRFFQ69G5FAV', '/ulid/{id}'],
    ['/user_settings/account_details', '/user_settings/account_details'],
    ['/facade/decade', '/facade/decade'],
    ['/v2/health?x=1', '/v2/health'],
  ];
  for (const [path, template] of cases) {
    it(`${path} -> ${template}`, () => expect(endpointTemplate(path)).toBe(template));
  }
});
