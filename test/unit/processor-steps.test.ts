import { describe, expect, it } from 'vitest';
import { compileProcessorRules, NO_RULES } from '../../services/processor/compiled-rules.js';
import {
  baseContext,
  changed,
  dlq,
  exclude,
  ok,
  runSteps,
  type Step,
  type StepContext,
  type StoredRecord,
} from '../../services/processor/pipeline.js';
import { emptyRules, type WorkflowRule } from '../../services/processor/rule-snapshot.js';
import { endpointStep } from '../../services/processor/steps/endpoint.step.js';
import { PROCESSOR_STEPS } from '../../services/processor/steps/index.js';
import { triggersStep } from '../../services/processor/steps/triggers.step.js';

function rec(over: Partial<StoredRecord> = {}): StoredRecord {
  return {
    sid: 'req_AAAAAAAAAAAAAAAAAAAAAAAAAAA',
    accountSid: 'acc_1',
    bucketSid: 'bkt_1',
    environmentSid: 'prod01',
    createdAt: '2026-11-01T00:00:00.000Z',
    receivedAt: '2026-11-01T00:00:00.000Z',
    request: { method: 'GET', path: '/users/42', headers: { authorization: 'Bearer s3cret' } },
    response: { statusCode: 200, body: null },
    ...over,
  };
}

const ctx: StepContext = baseContext('acc_1', 'bkt_1');

function rulesWith(p: Partial<ReturnType<typeof emptyRules>>): StepContext {
  const r = { ...emptyRules('acc_1', 'Acme'), ...p };
  r.bucketNames.set('bkt_1', 'main');
  return { accountSid: 'acc_1', bucketSid: 'bkt_1', rules: compileProcessorRules(r).forBucket('bkt_1') };
}

describe('processor steps report what they did', () => {
  it('endpoint: a derived template is reported as an added field; a sent one is kept as is', () => {
    const derived = endpointStep(rec(), ctx);
    expect(derived).toEqual({
      kind: 'ok',
      record: expect.objectContaining({ endpoint: '/users/{id}' }),
      added: ['endpoint'],
    });
    const sent = endpointStep(rec({ endpoint: '/users/:id' }), ctx);
    expect(sent).toEqual({ kind: 'ok', record: expect.objectContaining({ endpoint: '/users/:id' }) });
  });

  it('triggers: a hit adds workflowExecutions and jobs; no hit adds nothing (null in the record)', () => {
    const wf: WorkflowRule = {
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
    };
    const hit = triggersStep(rec(), rulesWith({ workflows: [wf] }));
    if (hit.kind !== 'ok') throw new Error(hit.kind);
    expect(hit.added).toEqual(['workflowExecutions']);
    expect(hit.jobs).toHaveLength(1);
    expect(hit.record.workflowExecutions).toEqual([
      { sid: hit.jobs![0]!.executionSid, workflowSid: 'wfl_1', triggerType: 'request' },
    ]);
    const none = triggersStep(rec(), ctx);
    expect(none).toEqual({ kind: 'ok', record: expect.objectContaining({ workflowExecutions: null }) });
  });

  it('redaction: a bucket rule that applies makes the record changed; none keeps it ok', () => {
    const withRule = rulesWith({
      redactions: [
        {
          sid: 'red_1',
          accountSid: 'acc_1',
          name: 'auth',
          fieldPath: '$.request.headers.authorization',
          redactionType: 'replace',
          replacementValue: '***',
          buckets: null,
          environments: null,
        },
      ],
    });
    const res = runSteps(rec(), withRule, PROCESSOR_STEPS);
    expect(res.kind).toBe('changed');
    if (res.kind !== 'changed') return;
    expect(res.record.request.headers).toEqual({ authorization: '***' });
    expect(res.added).toEqual(['endpoint']);
    expect(runSteps(rec(), { ...ctx, rules: NO_RULES }, PROCESSOR_STEPS)).toMatchObject({
      kind: 'ok',
      added: ['endpoint'],
    });
  });

  it('exclusions drop the record before any later step runs', () => {
    const withRule = rulesWith({
      exclusions: [
        {
          sid: 'exc_1',
          accountSid: 'acc_1',
          name: 'health',
          pathPattern: '/users/*',
          method: '*',
          statusCode: null,
          buckets: null,
          environments: null,
        },
      ],
    });
    let later = 0;
    const spy: Step = (r) => (later++, ok(r));
    expect(runSteps(rec(), withRule, [...PROCESSOR_STEPS, spy])).toEqual({
      kind: 'drop',
      reason: 'excluded by exc_1',
      excluded: true,
    });
    expect(later).toBe(0);
  });
});

describe('runSteps', () => {
  it('any changed step makes the result changed; added fields are named once, jobs gathered in order', () => {
    const job = (n: string) => ({ executionSid: n }) as never;
    const a: Step = (r) => ok(r, { added: ['x', 'y'], jobs: [job('1')] });
    const b: Step = (r) => changed({ ...r, body: 'rewritten' }, { added: ['y', 'z'] });
    const c: Step = (r) => ok(r, { jobs: [job('2')] });
    const res = runSteps(rec(), ctx, [a, b, c]);
    expect(res.kind).toBe('changed');
    if (res.kind !== 'changed') return;
    expect(res.added).toEqual(['x', 'y', 'z']);
    expect(res.jobs).toEqual([job('1'), job('2')]);
    expect(res.record.body).toBe('rewritten');
  });

  it('only ok steps: ok, with no added fields or jobs when none reported', () => {
    expect(runSteps(rec(), ctx, [(r) => ok(r), (r) => ok(r)])).toEqual({ kind: 'ok', record: rec() });
  });

  it('dlq and drop end the run with their reason', () => {
    expect(runSteps(rec(), ctx, [(r) => changed(r), () => dlq('bad'), () => exclude('never')])).toEqual({
      kind: 'dlq',
      reason: 'bad',
    });
  });
});
