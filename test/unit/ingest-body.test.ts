import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../services/ingest/ingest.app.js';
import { jsonEachRow } from '../../services/processor/requests.writer.js';
import { toRow } from '../../services/processor/row.mapper.js';
import type { StoredRecord } from '../../services/processor/pipeline.js';

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

describe('JSONEachRow lines of request rows', () => {
  it('writes the record as a raw object and every other column as JSON', () => {
    const record = {
      sid: 'req_aaaaaaaaaaaaaaaaaaaaaaaaaaa',
      accountSid: 'acc_1',
      bucketSid: 'bkt_1',
      createdAt: '2026-11-22T00:00:00.000Z',
      receivedAt: '2026-11-22T00:00:00.010Z',
      request: { method: 'post', path: '/a"b', body: '{"x":"\\u2028"}' },
      response: { statusCode: 201, body: null },
      timings: { duration: 12.5 },
      tags: [{ key: 'k', value: 'v\n' }],
    } as unknown as StoredRecord;
    const row = toRow(record, 3, 42);
    const text = jsonEachRow([row, row]);
    const lines = text.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe('');
    const parsed = JSON.parse(lines[0]!) as Record<string, unknown>;
    // The record column is the object itself in the line; ClickHouse reads it back as its text.
    expect(parsed.record).toEqual(JSON.parse(row.record));
    expect(lines[0]!.endsWith(`,"record":${row.record}}`)).toBe(true);
    const { record: _r, ...rest } = parsed;
    const { record: _s, ...expected } = row;
    expect(rest).toEqual(expected);
  });
});
