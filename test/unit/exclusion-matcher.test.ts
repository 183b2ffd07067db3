import { describe, expect, it } from 'vitest';
import { compileProcessorRules, type BucketRules } from '../../services/processor/compiled-rules.js';
import { compilePathPattern } from '../../services/shared/rules.js';
import { runSteps, type StoredRecord } from '../../services/processor/pipeline.js';
import { emptyRules, type ExclusionRule } from '../../services/processor/rule-snapshot.js';
import { exclusionsStep } from '../../services/processor/steps/exclusions.step.js';

describe('compilePathPattern (docs/rules.md)', () => {
  const cases: [string, string, boolean][] = [
    // exact
    ['/health', '/health', true],
    ['/health', '/health/', false],
    ['/health', '/healthz', false],
    ['/health', '/Health', false],
    // wildcard suffix
    ['/internal*', '/internal', true],
    ['/internal*', '/internal/metrics', true],
    ['/internal*', '/internals', true],
    ['/internal*', '/api/internal', false],
    // wildcard prefix
    ['*/health', '/health', true],
    ['*/health', '/v1/svc/health', true],
    ['*/health', '/v1/health/x', false],
    // wildcard in the middle
    ['/users/*/avatar', '/users/42/avatar', true],
    ['/users/*/avatar', '/users/a/b/avatar', true],
    ['/users/*/avatar', '/users//avatar', true],
    ['/users/*/avatar', '/users/42/avatar.png', false],
    ['/users/*/avatar', '/users/avatar', false],
    // several wildcards
    ['/a/*/v*/h*', '/a/x/v1/health', true],
    ['/a/*/v*/h*', '/a/x/y/v2/hello/world', true],
    ['/a/*/v*/h*', '/a/x/v1/status', false],
    ['/a/*/v*/h*', '/b/x/v1/health', false],
    ['*a*b*', 'xxaxxbxx', true],
    ['*a*b*', 'xxbxxaxx', false],
    // pieces must not overlap: head and tail share no characters
    ['/ab*ba', '/aba', false],
    ['/ab*ba', '/abba', true],
    // `*` alone
    ['*', '/anything/at/all', true],
    ['*', '', true],
    ['**', '/x', true],
    // regex metacharacters are literal
    ['/v1.0/(x)+', '/v1.0/(x)+', true],
    ['/v1.0/*', '/v1x0/a', false],
  ];
  for (const [pattern, path, expected] of cases) {
    it(`${pattern} ${expected ? 'matches' : 'does not match'} ${path || '(empty)'}`, () => {
      expect(compilePathPattern(pattern)(path)).toBe(expected);
    });
  }
});

let n = 0;
function rule(p: Partial<ExclusionRule>): ExclusionRule {
  n++;
  return {
    sid: `xcl_${n}`,
    accountSid: 'acc_1',
    name: `rule ${n}`,
    pathPattern: '*',
    method: '*',
    statusCode: null,
    buckets: null,
    environments: null,
    ...p,
  };
}

function rulesFor(exclusions: ExclusionRule[], bucket = 'bkt_1'): BucketRules {
  return compileProcessorRules({ ...emptyRules('acc_1'), exclusions }).forBucket(bucket);
}

function rec(
  method: string,
  path: string,
  status: number | null,
  env: string | null = 'prod01',
): StoredRecord {
  return {
    sid: 'req_1',
    accountSid: 'acc_1',
    bucketSid: 'bkt_1',
    environmentSid: env,
    createdAt: '2026-11-01T00:00:00.000Z',
    receivedAt: '2026-11-01T00:00:00.000Z',
    request: { method, path },
    response: status === null ? null : { statusCode: status },
  };
}

const run = (r: StoredRecord, rules: BucketRules) =>
  runSteps(r, { accountSid: 'acc_1', bucketSid: 'bkt_1', rules }, [exclusionsStep]).kind;

describe('exclusionsStep', () => {
  it('excludes successful preflights with `*` + OPTIONS + 200 and nothing else', () => {
    const rules = rulesFor([rule({ pathPattern: '*', method: 'OPTIONS', statusCode: 200 })]);
    expect(run(rec('OPTIONS', '/api/orders', 200), rules)).toBe('exclude');
    expect(run(rec('options', '/', 200), rules)).toBe('exclude');
    expect(run(rec('OPTIONS', '/api/orders', 204), rules)).toBe('ok');
    expect(run(rec('GET', '/api/orders', 200), rules)).toBe('ok');
    expect(run(rec('OPTIONS', '/api/orders', null), rules)).toBe('ok');
  });

  it('method `*` and statusCode null match everything; a given status must be equal', () => {
    const rules = rulesFor([rule({ pathPattern: '/health', method: '*', statusCode: null })]);
    expect(run(rec('GET', '/health', 200), rules)).toBe('exclude');
    expect(run(rec('POST', '/health', 503), rules)).toBe('exclude');
    expect(run(rec('GET', '/health', null), rules)).toBe('exclude');
    const only500 = rulesFor([rule({ pathPattern: '/health', method: 'get', statusCode: 500 })]);
    expect(run(rec('GET', '/health', 500), only500)).toBe('exclude');
    expect(run(rec('GET', '/health', 200), only500)).toBe('ok');
    expect(run(rec('POST', '/health', 500), only500)).toBe('ok');
  });

  it('ignores the query string of the path', () => {
    const rules = rulesFor([rule({ pathPattern: '/health' })]);
    expect(run(rec('GET', '/health?probe=1', 200), rules)).toBe('exclude');
  });

  it('applies only to the buckets and environments a rule names', () => {
    const scoped = [
      rule({ pathPattern: '/a', buckets: ['bkt_1'] }),
      rule({ pathPattern: '/b', buckets: ['bkt_2'] }),
      rule({ pathPattern: '/c', environments: ['stag01'] }),
    ];
    const b1 = rulesFor(scoped, 'bkt_1');
    expect(run(rec('GET', '/a', 200), b1)).toBe('exclude');
    expect(run(rec('GET', '/b', 200), b1)).toBe('ok');
    expect(run(rec('GET', '/c', 200, 'prod01'), b1)).toBe('ok');
    expect(run(rec('GET', '/c', 200, 'stag01'), b1)).toBe('exclude');
    expect(run(rec('GET', '/c', 200, null), b1)).toBe('ok');
    expect(run(rec('GET', '/b', 200), rulesFor(scoped, 'bkt_2'))).toBe('exclude');
  });

  it('marks the drop as an exclusion with the rule sid', () => {
    const x = rule({ pathPattern: '/x' });
    const res = runSteps(
      rec('GET', '/x', 200),
      { accountSid: 'acc_1', bucketSid: 'bkt_1', rules: rulesFor([x]) },
      [exclusionsStep],
    );
    expect(res).toEqual({ kind: 'exclude', ruleSid: x.sid });
  });
});
