import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  compileRedaction,
  hashValue,
  maskString,
  maskValue,
  redactRecord,
  type CompiledRedaction,
  type RedactTarget,
} from '../../services/processor/redaction.js';
import type { RedactionRule, RedactionType } from '../../services/processor/rule-snapshot.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

let n = 0;
function compiled(fieldPath: string, redactionType: RedactionType, replacementValue: string | null = null) {
  n++;
  const r: RedactionRule = {
    sid: `rdc_${n}`,
    accountSid: 'acc_1',
    name: `r${n}`,
    fieldPath,
    redactionType,
    replacementValue,
    buckets: null,
    environments: null,
  };
  const c = compileRedaction(r);
  if (!c.ok) throw new Error(c.error);
  return c.rule;
}

function record(
  over: Partial<RedactTarget['request']> = {},
  response: Record<string, unknown> | null = null,
) {
  return {
    request: {
      method: 'POST',
      path: '/pay',
      url: 'https://api.example.com/pay?token=abc123&page=2',
      queryString: { token: 'abc123', page: '2' },
      headers: { Authorization: 'Bearer sk_live_9', 'Content-Type': 'application/json' },
      body: JSON.stringify({ card: '4111-1111-1111-1111', user: { password: 'hunter2', name: 'Al' } }),
      contentType: 'application/json',
      ...over,
    },
    response,
  } as RedactTarget;
}

const apply = (r: RedactTarget, ...rules: CompiledRedaction[]) => {
  redactRecord(r, rules);
  return r;
};
const body = (r: RedactTarget) => JSON.parse(r.request.body as string) as Record<string, unknown>;

describe('mask', () => {
  it('keeps length and format', () => {
    expect(maskString('4111-1111-1111-1111')).toBe('****-****-****-****');
    expect(maskString('Ab c.9!')).toBe('** *.*!');
    expect(maskString('Zoë 42')).toBe('*** **');
  });
  it('masks numbers as strings with the same digit count, and every leaf of objects', () => {
    expect(maskValue(1234)).toBe('****');
    expect(maskValue(-12.5)).toBe('-**.*');
    expect(maskValue(true)).toBe('****');
    expect(maskValue(null)).toBe(null);
    expect(maskValue({ a: 'xy', b: [1, 'z'] })).toEqual({ a: '**', b: ['*', '*'] });
  });
});

describe('redaction types on a JSON body field', () => {
  it('mask', () => {
    const r = apply(record(), compiled('$.request.body.card', 'mask'));
    expect(body(r).card).toBe('****-****-****-****');
    expect(r.request.body).not.toContain('4111');
  });
  it('remove', () => {
    const r = apply(record(), compiled('$.request.body.card', 'remove'));
    expect(body(r)).not.toHaveProperty('card');
    expect(body(r).user).toEqual({ password: 'hunter2', name: 'Al' });
  });
  it('hash writes the SHA-256 hex of the string form', () => {
    const r = apply(record(), compiled('$.request.body.card', 'hash'));
    expect(body(r).card).toBe(sha('4111-1111-1111-1111'));
    const r2 = apply(record(), compiled('$.request.body.user', 'hash'));
    expect(body(r2).user).toBe(sha(JSON.stringify({ password: 'hunter2', name: 'Al' })));
    expect(hashValue(42)).toBe(sha('42'));
  });
  it('replace writes replacementValue', () => {
    const r = apply(record(), compiled('$.request.body.user.password', 'replace', '[gone]'));
    expect(body(r).user).toEqual({ password: '[gone]', name: 'Al' });
  });
  it('redacts object bodies in place and leaves a body without the field unchanged (same string)', () => {
    const r = apply(record({ body: { card: '4111 1111', n: 1 } }), compiled('$.request.body.card', 'mask'));
    expect(r.request.body).toEqual({ card: '**** ****', n: 1 });
    const raw = '{ "other": 1 }';
    const r2 = apply(record({ body: raw }), compiled('$.request.body.card', 'mask'));
    expect(r2.request.body).toBe(raw);
  });
});

describe('paths', () => {
  it('array wildcard', () => {
    const b = JSON.stringify({ items: [{ card: '4111', id: 1 }, { card: '5500', id: 2 }, { id: 3 }] });
    const r = apply(record({ body: b }), compiled('$.request.body.items[*].card', 'mask'));
    expect(body(r).items).toEqual([{ card: '****', id: 1 }, { card: '****', id: 2 }, { id: 3 }]);
  });
  it('remove of array elements keeps the other elements in order', () => {
    const r = apply(
      record({ body: { list: ['a', 'b', 'c'] } }),
      compiled('$.request.body.list[*]', 'remove'),
    );
    expect(r.request.body).toEqual({ list: [] });
    const r2 = apply(
      record({ body: { list: ['a', 'b', 'c'] } }),
      compiled('$.request.body.list[1]', 'remove'),
    );
    expect(r2.request.body).toEqual({ list: ['a', 'c'] });
  });
  it('$..password reaches every depth of both bodies', () => {
    const resBody = JSON.stringify({ password: 'top', deep: [{ x: { password: 'p2' } }] });
    const r = apply(
      record({}, { statusCode: 200, body: resBody, contentType: 'application/json' }),
      compiled('$..password', 'replace', 'X'),
    );
    expect(body(r).user).toEqual({ password: 'X', name: 'Al' });
    expect(JSON.parse(r.response!.body as string)).toEqual({
      password: 'X',
      deep: [{ x: { password: 'X' } }],
    });
  });
  it('$.field without a part applies to the top level of both bodies', () => {
    const r = apply(
      record({ body: { card: '1', nested: { card: '2' } } }, { body: { card: '3' } }),
      compiled('$.card', 'remove'),
    );
    expect(r.request.body).toEqual({ nested: { card: '2' } });
    expect(r.response!.body).toEqual({});
  });
  it('response body only', () => {
    const r = apply(
      record({ body: { secret: 'a' } }, { body: { secret: 'b' } }),
      compiled('$.response.body.secret', 'mask'),
    );
    expect(r.request.body).toEqual({ secret: 'a' });
    expect(r.response!.body).toEqual({ secret: '*' });
  });
});

describe('headers and query parameters', () => {
  it('header names are case-insensitive; list values are redacted one by one', () => {
    const r = apply(record(), compiled('$.request.headers.authorization', 'mask'));
    expect((r.request.headers as Record<string, unknown>).Authorization).toBe('****** **_****_*');
    const r2 = apply(
      record({}, { headers: { 'Set-Cookie': ['a=1', 'b=2'] } }),
      compiled('$.response.headers.set-cookie', 'replace', 'R'),
    );
    expect(r2.response!.headers).toEqual({ 'Set-Cookie': ['R', 'R'] });
    const r3 = apply(record(), compiled('$.request.headers.AUTHORIZATION', 'remove'));
    expect(r3.request.headers).toEqual({ 'Content-Type': 'application/json' });
  });
  it('a query parameter is redacted in queryString, url and path', () => {
    const r = apply(
      record({ path: '/pay?token=abc123&page=2' }),
      compiled('$.request.queryString.token', 'hash'),
    );
    const h = sha('abc123');
    expect(r.request.queryString).toEqual({ token: h, page: '2' });
    expect(r.request.url).toBe(`https://api.example.com/pay?token=${h}&page=2`);
    expect(r.request.path).toBe(`/pay?token=${h}&page=2`);
    const r2 = apply(record(), compiled('$.request.queryString.token', 'remove'));
    expect(r2.request.queryString).toEqual({ page: '2' });
    expect(r2.request.url).toBe('https://api.example.com/pay?page=2');
    const r3 = apply(
      record({ queryString: { ids: ['12', '34'] } }),
      compiled('$.request.queryString.ids', 'mask'),
    );
    expect(r3.request.queryString).toEqual({ ids: ['**', '**'] });
  });
  it('url without the parameter is left byte for byte', () => {
    const url = 'https://x.test/a?b=%20c+d';
    const r = apply(record({ url }), compiled('$.request.queryString.token', 'mask'));
    expect(r.request.url).toBe(url);
  });
});

describe('non-JSON bodies', () => {
  it('are left whole by field rules', () => {
    const r = apply(
      record({ body: 'password=hunter2 plain text', contentType: 'text/plain' }),
      compiled('$..password', 'mask'),
    );
    expect(r.request.body).toBe('password=hunter2 plain text');
    const broken = '{"password": "hunter2"';
    const r2 = apply(record({ body: broken }), compiled('$..password', 'mask'));
    expect(r2.request.body).toBe(broken);
  });
  it('JSON keys written with escapes are still found (the fast pre-check must not skip them)', () => {
    const escaped = '{"user":{"pass\\u0077ord":"hunter2"},"a\\/b":"x"}';
    const r = apply(
      record({ body: escaped }),
      compiled('$..password', 'mask'),
      compiled("$['a/b']", 'remove'),
    );
    expect(JSON.parse(r.request.body as string)).toEqual({ user: { password: '*******' } });
  });
  it('form-urlencoded bodies are redacted field by field', () => {
    const r = apply(
      record({ body: 'user=al&password=hunter2', contentType: 'application/x-www-form-urlencoded' }),
      compiled('$.request.body.password', 'mask'),
    );
    expect(r.request.body).toBe('user=al&password=*******');
  });
});

describe('rule order and scoping', () => {
  it('applies rules in order on one parse of the body', () => {
    const r = apply(
      record(),
      compiled('$.request.body.card', 'mask'),
      compiled('$.request.body.user', 'remove'),
    );
    expect(body(r)).toEqual({ card: '****-****-****-****' });
  });
  it('refuses an invalid field path at compile time', () => {
    const c = compileRedaction({
      sid: 'rdc_x',
      accountSid: 'a',
      name: 'x',
      fieldPath: 'password',
      redactionType: 'mask',
      replacementValue: null,
      buckets: null,
      environments: null,
    });
    expect(c.ok).toBe(false);
  });
});
