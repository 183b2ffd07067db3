import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../services/ingest/ingest.app.js';

describe('ingest JSON body parser', () => {
  it('parses ordinary bodies, including the words in string values', () => {
    expect(parseJsonBody('{"records":[{"a":1}]}')).toEqual({ records: [{ a: 1 }] });
    expect(parseJsonBody('{"note":"a constructor and __proto__ in text"}')).toEqual({
      note: 'a constructor and __proto__ in text',
    });
    expect(parseJsonBody('{"constructor":"plain value"}')).toEqual({ constructor: 'plain value' });
  });

  it('refuses prototype poisoning with a 400, at any depth', () => {
    for (const body of [
      '{"__proto__":{"admin":true}}',
      '{"records":[{"request":{"headers":{"__proto__":{"x":1}}}}]}',
      '{"a":{"constructor":{"prototype":{"polluted":true}}}}',
    ]) {
      let err: (Error & { statusCode?: number }) | undefined;
      try {
        parseJsonBody(body);
      } catch (e) {
        err = e as Error & { statusCode?: number };
      }
      expect(err?.statusCode).toBe(400);
    }
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('throws a SyntaxError on malformed JSON', () => {
    expect(() => parseJsonBody('{"records":[')).toThrow(SyntaxError);
  });
});
