import { describe, expect, it } from 'vitest';
import { compileCriteria } from '../../services/api/requests/criteria.compiler.js';
import {
  compileExclusionCriteria,
  tryCompileExclusionCriteria,
  type CriteriaRecord,
} from '../../services/processor/exclusion-criteria.js';
import { AppError } from '../../services/shared/errors.js';

/**
 * The in-memory evaluator of exclusion criteria agrees with the SQL the stream-view compiler emits
 * over the `requests` columns (row.mapper.ts): each case says what ClickHouse answers for the row of
 * the record, and both back ends must accept the same texts and refuse the same texts.
 */

function rec(over: Partial<CriteriaRecord> & Record<string, unknown> = {}): CriteriaRecord {
  return {
    environmentSid: 'prod01',
    contextSid: 'ctx1',
    direction: 'in',
    firewall: { blocked: false },
    tags: [
      { key: 'team', value: 'core' },
      { key: 'ver', value: 'v1.2' },
    ],
    timings: { duration: 120 },
    request: { method: 'post', host: 'API.Example.com', path: '/v1/Orders/123/items?x=1' },
    response: { statusCode: 503 },
    ...over,
  };
}

const base = rec();
const noResponse = rec({ response: null });
const noDuration = rec({ timings: null });
const blocked = rec({ firewall: { blocked: true }, direction: 'out' });
const bare = { request: {} } as CriteriaRecord;

// criteria, record, what the SQL WHERE answers for that record's row
const CASES: [string, CriteriaRecord, boolean][] = [
  ['', base, true],
  ['   ', bare, true],
  // method: upper-cased column, alternatives
  ['method:POST', base, true],
  ['method:post', base, true],
  ['method:GET,POST', base, true],
  ['method:GET', base, false],
  ['-method:GET', base, true],
  ['method:GET', bare, false],
  // status: exact, class, comparisons, ranges, alternatives, 0 without a response
  ['status:503', base, true],
  ['status:5xx', base, true],
  ['status:50x', base, true],
  ['status:51x', base, false],
  ['status:>=500', base, true],
  ['status:>503', base, false],
  ['status:<=503', base, true],
  ['status:!=503', base, false],
  ['status:=503', base, true],
  ['status:500..599', base, true],
  ['status:200..299', base, false],
  ['status:404,503', base, true],
  ['-status:200..299', noResponse, true],
  ['status:0', noResponse, true],
  ['status:<100', noResponse, true],
  // duration: null never matches, negation then matches
  ['duration:>100', base, true],
  ['duration:>0.1s', base, true],
  ['duration:>=120ms', base, true],
  ['duration:100..200', base, true],
  ['duration:>1s', base, false],
  ['duration:>100', noDuration, false],
  ['-duration:>100', noDuration, true],
  ['duration:<1000000', noDuration, false],
  // path: exact or glob over the stored path (query included), case-sensitive
  ['path:/v1/Orders/123/items?x=1', base, true],
  ['path:/v1/orders/*', base, false],
  ['path:/v1/Orders/*', base, true],
  ['path:*/items*', base, true],
  ['path:/v1/*/items', base, false],
  ['path:/v1/*/123/*', base, true],
  ['path:/v1/Orders/1_3/*', base, false],
  ['path:*', bare, true],
  ['path:/x', bare, false],
  // bare word: case-insensitive substring of the path
  ['orders', base, true],
  ['ORDERS/123', base, true],
  ['"items?x"', base, true],
  ['-orders', base, false],
  ['missing', base, false],
  // endpoint: the record's, else the template of the path
  ['endpoint:/v1/Orders/{id}/items', base, true],
  ['endpoint:/v1/Orders/{id}/*', base, true],
  ['endpoint:/custom', rec({ endpoint: '/custom' }), true],
  // host: exact compared lower-cased, wildcards case-insensitive
  ['host:api.example.com', base, true],
  ['host:API.EXAMPLE.COM', base, true],
  ['host:*.example.com', base, true],
  ['host:*.EXAMPLE.*', base, true],
  ['host:other.com,api.example.com', base, true],
  ['host:example.com', base, false],
  // env, context: exact, alternatives
  ['env:prod01', base, true],
  ['env:stag01,prod01', base, true],
  ['env:prod', base, false],
  ['env:prod01', bare, false],
  ['context:ctx1', base, true],
  ['context:ctx2', base, false],
  // direction: default in
  ['direction:in', base, true],
  ['direction:OUT', blocked, true],
  ['direction:in', bare, true],
  // blocked
  ['blocked:false', base, true],
  ['blocked:true', blocked, true],
  ['blocked:true', bare, false],
  // tag: presence, exact value, glob value
  ['tag:team', base, true],
  ['tag:team=core', base, true],
  ['tag:team=co*', base, true],
  ['tag:team=Core', base, false],
  ['tag:ver=v1.*', base, true],
  ['tag:owner', base, false],
  ['-tag:owner', base, true],
  ['tag:team', bare, false],
  // AND of terms
  ['method:POST status:5xx -path:/health env:prod01', base, true],
  ['method:POST status:5xx path:/health', base, false],
  ['status:5xx -status:503', base, false],
];

describe('exclusion criteria evaluator', () => {
  for (const [text, record, expected] of CASES) {
    it(`${JSON.stringify(text)} -> ${expected}`, () => {
      // Same language: the SQL compiler accepts every case the evaluator does.
      expect(() => compileCriteria(text)).not.toThrow();
      expect(compileExclusionCriteria(text).matches(record)).toBe(expected);
    });
  }

  it('refuses what the SQL compiler refuses, with the position of the term at fault', () => {
    const bad: [string, number][] = [
      ['method:GET colour:red', 11],
      ['status:abc', 0],
      ['method:GET status:300..200', 11],
      ['path:"unterminated', 5],
      ['path:"a"b', 8],
      ['- path:/x', 0],
      ['status: path:/x', 0],
      ['x_y:1', 0],
      ['direction:sideways', 0],
      ['blocked:maybe', 0],
      ['tag:=x', 0],
    ];
    for (const [text, position] of bad) {
      expect(() => compileCriteria(text), text).toThrow(AppError);
      const res = tryCompileExclusionCriteria(text);
      expect(res.ok, text).toBe(false);
      if (!res.ok) expect(res.error.position, text).toBe(position);
      let err: unknown;
      try {
        compileExclusionCriteria(text, 'body.criteria');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(400);
      expect((err as AppError).details).toMatchObject({ position });
      expect((err as AppError).message).toContain(`at position ${position}`);
    }
    expect(() => compileExclusionCriteria('x'.repeat(4097))).toThrow(/longer than/);
  });

  it('evaluates a wide criteria text in bounded time per record', () => {
    const c = compileExclusionCriteria(`path:${'*a'.repeat(40)}*b`);
    const r = rec({ request: { path: `/${'a'.repeat(8000)}` } });
    const t0 = process.hrtime.bigint();
    expect(c.matches(r)).toBe(false);
    expect(Number(process.hrtime.bigint() - t0) / 1e6).toBeLessThan(2000);
  });
});
