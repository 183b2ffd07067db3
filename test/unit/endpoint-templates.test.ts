import { describe, expect, it } from 'vitest';
import {
  placeholderName,
  suggestTemplates,
} from '../../services/api/endpoint-templates/endpoint-template-suggestions.js';
import { compileProcessorRules } from '../../services/processor/compiled-rules.js';
import type { StepContext, StoredRecord } from '../../services/processor/pipeline.js';
import { emptyRules } from '../../services/processor/rule-snapshot.js';
import { endpointStep } from '../../services/processor/steps/endpoint.step.js';
import {
  compileEndpointTemplates,
  parseEndpointPattern,
  patternShape,
  type EndpointTemplateRule,
} from '../../services/shared/endpoint-pattern.js';

const rule = (pattern: string, method: string | null = null, sid = 'ept_1'): EndpointTemplateRule => ({
  sid,
  pattern,
  method,
});

function ctxWith(rules: EndpointTemplateRule[]): StepContext {
  const r = emptyRules('acc_1', 'Acme');
  r.endpointTemplates.set('bkt_1', rules);
  r.endpointTemplates.set('bkt_2', [rule('/other/{x}')]);
  return { accountSid: 'acc_1', bucketSid: 'bkt_1', rules: compileProcessorRules(r).forBucket('bkt_1') };
}

function rec(path: string, method = 'GET', over: Partial<StoredRecord> = {}): StoredRecord {
  return {
    sid: 'req_AAAAAAAAAAAAAAAAAAAAAAAAAAA',
    accountSid: 'acc_1',
    bucketSid: 'bkt_1',
    createdAt: '2026-11-01T00:00:00.000Z',
    receivedAt: '2026-11-01T00:00:00.000Z',
    request: { method, path },
    response: { statusCode: 200 },
    ...over,
  };
}

const endpointOf = (ctx: StepContext, r: StoredRecord) => {
  const res = endpointStep(r, ctx);
  if (res.kind !== 'ok') throw new Error(res.kind);
  return res.record.endpoint;
};

describe('endpoint template patterns', () => {
  it.each([
    ['/coupons/{code}', [`coupons`, null]],
    ['/users/{id}/coupons/{code}', ['users', null, 'coupons', null]],
    ['/{tenant}', [null]],
    ['/v1/shops/{shop_id}/items', ['v1', 'shops', null, 'items']],
  ])('%s parses', (pattern, segments) => {
    expect(parseEndpointPattern(pattern)).toEqual({ ok: true, segments });
  });

  it.each([
    ['coupons/{code}', 'must start with /'],
    ['/coupons', 'must have at least one {placeholder}'],
    ['/coupons/{code}/', 'must not have an empty segment'],
    ['/coupons//{code}', 'must not have an empty segment'],
    ['/coupons/v{n}', 'neither a literal nor a whole {placeholder}'],
    ['/coupons/{}', 'neither a literal nor a whole {placeholder}'],
    ['/coupons/{1x}', 'neither a literal nor a whole {placeholder}'],
    ['/coupons/{code}?x=1', 'query string'],
    ['/coupons/*', 'must not contain *'],
    ['/coupons/{a b}', 'spaces'],
    ['/a/{x}/b/{x}', 'names the placeholder {x} twice'],
    [`/${'a/'.repeat(32)}{x}`, 'at most 32 segments'],
    [`/{x}/${'a'.repeat(520)}`, 'at most 512 characters'],
  ])('%s is refused: %s', (pattern, phrase) => {
    const p = parseEndpointPattern(pattern);
    expect(p.ok).toBe(false);
    expect(p.ok ? '' : p.error).toContain(phrase);
  });

  it('the shape leaves placeholder names out', () => {
    const shape = (p: string) => {
      const r = parseEndpointPattern(p);
      if (!r.ok) throw new Error(r.error);
      return patternShape(r.segments);
    };
    expect(shape('/coupons/{code}')).toBe('/coupons/{}');
    expect(shape('/coupons/{id}')).toBe(shape('/coupons/{code}'));
    expect(shape('/coupons/{id}/x')).not.toBe(shape('/coupons/{id}'));
  });
});

describe('endpoint template matcher', () => {
  const m = compileEndpointTemplates([
    rule('/coupons/{code}', 'GET'),
    rule('/coupons/{any}'),
    rule('/users/{id}/coupons/{code}'),
    rule('/{tenant}/health'),
  ])!;

  it('a placeholder matches any one non-empty segment, literals match exactly', () => {
    expect(m.match('/coupons/XMAS24', 'GET')).toBe('/coupons/{code}');
    expect(m.match('/coupons/FREESHIP', 'GET')).toBe('/coupons/{code}');
    expect(m.match('/users/42/coupons/XMAS24', 'GET')).toBe('/users/{id}/coupons/{code}');
    expect(m.match('/acme/health', 'HEAD')).toBe('/{tenant}/health');
    expect(m.match('/Coupons/XMAS24', 'GET')).toBeNull();
    expect(m.match('/coupons/', 'GET')).toBeNull();
    expect(m.match('/coupons', 'GET')).toBeNull();
    expect(m.match('/coupons/XMAS24/redeem', 'GET')).toBeNull();
    expect(m.match('coupons/XMAS24', 'GET')).toBeNull();
    expect(m.match('/acme/healthz', 'GET')).toBeNull();
  });

  it('the first rule in list order wins; a rule with a method matches that method only', () => {
    expect(m.match('/coupons/XMAS24', 'GET')).toBe('/coupons/{code}');
    expect(m.match('/coupons/XMAS24', 'POST')).toBe('/coupons/{any}');
    const reversed = compileEndpointTemplates([rule('/coupons/{any}'), rule('/coupons/{code}', 'GET')])!;
    expect(reversed.match('/coupons/XMAS24', 'GET')).toBe('/coupons/{any}');
  });

  it('no rule (or only rules that do not parse) compiles to null', () => {
    expect(compileEndpointTemplates([])).toBeNull();
    expect(compileEndpointTemplates([rule('/no-placeholder')])).toBeNull();
  });
});

describe('endpoint step with template rules', () => {
  const ctx = ctxWith([rule('/coupons/{code}'), rule('/orders/{ref}', 'POST')]);

  it('a matching path is stored under the rule pattern, on a copy', () => {
    const given = rec('/coupons/XMAS24?utm=x');
    const res = endpointStep(given, ctx);
    expect(res).toEqual({
      kind: 'ok',
      record: { ...rec('/coupons/XMAS24?utm=x'), endpoint: '/coupons/{code}' },
    });
    expect(given.endpoint).toBeUndefined();
  });

  it('rules come before the automatic templating; without a match the automatic template applies', () => {
    // 12345 alone would be {id}: the rule names it first.
    expect(endpointOf(ctx, rec('/coupons/12345'))).toBe('/coupons/{code}');
    expect(endpointOf(ctx, rec('/orders/ABC-DEF', 'post'))).toBe('/orders/{ref}');
    expect(endpointOf(ctx, rec('/orders/ABC-DEF', 'GET'))).toBe('/orders/ABC-DEF');
    expect(endpointOf(ctx, rec('/users/42'))).toBe('/users/{id}');
  });

  it("a client's own endpoint is kept; other buckets' rules do not apply", () => {
    expect(endpointOf(ctx, rec('/coupons/XMAS24', 'GET', { endpoint: '/coupons/:code' }))).toBe(
      '/coupons/:code',
    );
    expect(endpointOf(ctx, rec('/other/thing'))).toBe('/other/thing');
  });
});

describe('endpoint template suggestions', () => {
  const counts = (endpoints: Record<string, number>) =>
    Object.entries(endpoints).map(([endpoint, requests]) => ({ endpoint, requests }));

  it('endpoints differing in one code-like segment become one suggestion, busiest examples first', () => {
    const s = suggestTemplates(
      counts({
        '/coupons/XMAS24': 40,
        '/coupons/FREESHIP': 25,
        '/coupons/SPRING10': 10,
        '/coupons/WELCOME5': 5,
        '/orders/{id}': 500,
        '/health': 100,
      }),
      new Set(),
    );
    expect(s).toEqual([
      {
        pattern: '/coupons/{coupon}',
        examples: ['/coupons/XMAS24', '/coupons/FREESHIP', '/coupons/SPRING10', '/coupons/WELCOME5'],
        endpoints: 4,
        requests: 80,
      },
    ]);
  });

  it('a segment in the middle, beside an automatic {id}', () => {
    const s = suggestTemplates(
      counts({
        '/users/{id}/coupons/AB1/redeem': 3,
        '/users/{id}/coupons/CD2/redeem': 2,
        '/users/{id}/coupons/EF3/redeem': 1,
      }),
      new Set(),
    );
    expect(s.map((x) => x.pattern)).toEqual(['/users/{id}/coupons/{coupon}/redeem']);
  });

  it('a few lower-case words are resources, not ids; many are offered; fewer than 3 values are not', () => {
    expect(
      suggestTemplates(counts({ '/api/users': 1, '/api/orders': 1, '/api/products': 1 }), new Set()),
    ).toEqual([]);
    expect(suggestTemplates(counts({ '/coupons/XMAS24': 1, '/coupons/FREESHIP': 1 }), new Set())).toEqual([]);
    const slugs = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [`/posts/slug-${'abcdefghijklmnopqrst'[i]}`, 1]),
    );
    expect(suggestTemplates(counts(slugs), new Set()).map((x) => x.pattern)).toEqual(['/posts/{post}']);
  });

  it('a pattern the bucket already has (any placeholder name) is not offered again', () => {
    const c = counts({ '/coupons/XMAS24': 1, '/coupons/FREESHIP': 1, '/coupons/SPRING10': 1 });
    expect(suggestTemplates(c, new Set(['/coupons/{}']))).toEqual([]);
  });

  it('placeholder names come from the segment before', () => {
    expect(placeholderName('coupons')).toBe('coupon');
    expect(placeholderName('categories')).toBe('category');
    expect(placeholderName('shop')).toBe('shop_id');
    expect(placeholderName('{id}')).toBe('value');
    expect(placeholderName(undefined)).toBe('value');
    expect(placeholderName('v1.2')).toBe('v1_2_id');
  });
});
