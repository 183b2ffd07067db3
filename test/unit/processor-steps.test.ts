import { describe, expect, it } from 'vitest';
import { compileProcessorRules, NO_RULES } from '../../services/processor/compiled-rules.js';
import {
  baseContext,
  dlq,
  drop,
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

describe('processor steps return copies, never change the record given', () => {
  it('endpoint: a derived template is set on a copy; a sent one is kept as is', () => {
    const given = rec();
    const derived = endpointStep(given, ctx);
    expect(derived).toEqual({ kind: 'ok', record: { ...rec(), endpoint: '/users/{id}' } });
    expect(given).toEqual(rec());
    const sent = rec({ endpoint: '/users/:id' });
    expect(endpointStep(sent, ctx)).toEqual({ kind: 'ok', record: sent });
  });

  it('triggers: a hit adds workflowExecutions (on a copy) and jobs; no hit adds nothing', () => {
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
    const given = rec();
    const hit = triggersStep(given, rulesWith({ workflows: [wf] }));
    if (hit.kind !== 'ok') throw new Error(hit.kind);
    expect(hit.jobs).toHaveLength(1);
    expect(hit.record).toEqual({
      ...rec(),
      workflowExecutions: [{ sid: hit.jobs![0]!.executionSid, workflowSid: 'wfl_1', triggerType: 'request' }],
    });
    expect(given).toEqual(rec());
    const none = rec();
    expect(triggersStep(none, ctx)).toEqual({ kind: 'ok', record: none });
  });

  it('redaction: a bucket rule that applies redacts a copy; none keeps the record given', () => {
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
    const given = rec();
    const res = runSteps(given, withRule, PROCESSOR_STEPS);
    expect(res.kind).toBe('ok');
    if (res.kind !== 'ok') return;
    expect(res.record.request.headers).toEqual({ authorization: '***' });
    expect(res.record.endpoint).toBe('/users/{id}');
    expect(given).toEqual(rec());
    expect(runSteps(rec(), { ...ctx, rules: NO_RULES }, PROCESSOR_STEPS)).toEqual({
      kind: 'ok',
      record: { ...rec(), endpoint: '/users/{id}' },
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
      kind: 'exclude',
      ruleSid: 'exc_1',
    });
    expect(later).toBe(0);
  });
});

describe('runSteps', () => {
  it('each step gets the record the one before returned; jobs gathered in order', () => {
    const job = (n: string) => ({ executionSid: n }) as never;
    const a: Step = (r) => ok({ ...r, x: 1 }, { jobs: [job('1')] });
    const b: Step = (r) => ok({ ...r, body: 'rewritten', y: r.x });
    const c: Step = (r) => ok(r, { jobs: [job('2')] });
    const res = runSteps(rec(), ctx, [a, b, c]);
    expect(res.kind).toBe('ok');
    if (res.kind !== 'ok') return;
    expect(res.jobs).toEqual([job('1'), job('2')]);
    expect(res.record).toEqual({ ...rec(), x: 1, body: 'rewritten', y: 1 });
  });

  it('only ok steps: ok, with no added fields or jobs when none reported', () => {
    expect(runSteps(rec(), ctx, [(r) => ok(r), (r) => ok(r)])).toEqual({ kind: 'ok', record: rec() });
  });

  it('dlq and drop end the run with their reason; a dead letter holds the record as it was left', () => {
    const tagged: Step = (r) => ok({ ...r, tags: [] });
    expect(runSteps(rec(), ctx, [tagged, () => dlq('bad'), () => exclude('never')])).toEqual({
      kind: 'dlq',
      reason: 'bad',
      record: { ...rec(), tags: [] },
    });
    expect(runSteps(rec(), ctx, [() => drop('repeat'), () => exclude('never')])).toEqual({
      kind: 'drop',
      reason: 'repeat',
    });
    const thrower: Step = () => {
      throw new Error('boom');
    };
    expect(runSteps(rec(), ctx, [tagged, thrower])).toEqual({
      kind: 'dlq',
      reason: 'pipeline step failed: boom',
      record: { ...rec(), tags: [] },
    });
  });
});
