import { describe, expect, it } from 'vitest';
import { isPoisoned, parseJsonBody } from '../../services/ingest/ingest.app.js';

describe('ingest JSON body parser', () => {
  it('parses ordinary bodies, including the words in string values', () => {
    expect(parseJsonBody('{"records":[{"a":1}]}')).toEqual({ records: [{ a: 1 }] });
    expect(parseJsonBody('{"note":"a constructor and __proto__ in text"}')).toEqual({
      note: 'a constructor and __proto__ in text',
    });
    expect(parseJsonBody('{"constructor":"plain value"}')).toEqual({ constructor: 'plain value' });
  });

  it('refuses prototype poisoning outside a record list with a 400, at any depth', () => {
    for (const body of [
      '{"__proto__":{"admin":true}}',
      '{"a":{"constructor":{"prototype":{"polluted":true}}}}',
      '{"records":[{"a":1}],"__proto__":{"admin":true}}',
      '{"records":[{"a":1}],"x":{"__proto__":1}}',
      '{"records":{"__proto__":1}}',
    ]) {
      let err: (Error & { statusCode?: number }) | undefined;
      try {
        parseJsonBody(body);
      } catch (e) {
        err = e as Error & { statusCode?: number };
      }
      expect(err?.statusCode, body).toBe(400);
    }
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('marks the items of a record list or a call array that hold such a key, and drops the key', () => {
    const body = parseJsonBody(
      '{"records":[{"a":1},{"request":{"headers":{"__proto__":{"x":1},"accept":"*/*"}}},{"b":{"constructor":{"prototype":{}}}}]}',
    ) as { records: { request?: { headers: Record<string, unknown> } }[] };
    expect(body.records.map(isPoisoned)).toEqual([false, true, true]);
    const headers = body.records[1]!.request!.headers;
    expect(Object.keys(headers)).toEqual(['accept']);
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
    const calls = parseJsonBody('[{"a":1},{"__proto__":{"admin":true}}]') as unknown[];
    expect(calls.map(isPoisoned)).toEqual([false, true]);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('throws a SyntaxError on malformed JSON', () => {
    expect(() => parseJsonBody('{"records":[')).toThrow(SyntaxError);
  });
});
