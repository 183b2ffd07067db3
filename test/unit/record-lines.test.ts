import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayElementRanges, recordLine } from '../../services/ingest/record-lines.js';

const parseRange = (b: Buffer, [s, e]: [number, number]) =>
  JSON.parse(b.subarray(s, e).toString('utf8')) as unknown;

describe('arrayElementRanges (record bytes cut from an ingest body)', () => {
  it('finds each element of the top-level array, whatever strings and nesting hold', () => {
    const body = Buffer.from(
      '  {"note":"a ] } \\" [ {","records" : [ {"a":"x\\\\","b":[1,{"c":"]"}]} ,\n' +
        '{"d":"é ✓ 😀","e":null,"f":-1.5e3,"g":true}, [] , "s", 12 ,null ], "z":{"records":[]}}  ',
    );
    const ranges = arrayElementRanges(body, 'records')!;
    expect(ranges.map((r) => parseRange(body, r))).toEqual([
      { a: 'x\\', b: [1, { c: ']' }] },
      { d: 'é ✓ 😀', e: null, f: -1500, g: true },
      [],
      's',
      12,
      null,
    ]);
  });

  it('takes the last of repeated keys, as JSON.parse does', () => {
    const body = Buffer.from('{"records":[{"a":1}],"records":[{"b":2},{"c":3}]}');
    expect(arrayElementRanges(body, 'records')!.map((r) => parseRange(body, r))).toEqual([
      { b: 2 },
      { c: 3 },
    ]);
  });

  it('gives up (undefined) on an escaped key, a non-array value, a non-object body or no key', () => {
    expect(arrayElementRanges(Buffer.from('{"rec\\u006frds":[{"a":1}]}'), 'records')).toBeUndefined();
    expect(arrayElementRanges(Buffer.from('{"records":{"a":1}}'), 'records')).toBeUndefined();
    expect(arrayElementRanges(Buffer.from('[{"records":[]}]'), 'records')).toBeUndefined();
    expect(arrayElementRanges(Buffer.from('{"other":[1]}'), 'records')).toBeUndefined();
    expect(arrayElementRanges(Buffer.from('{}'), 'records')).toBeUndefined();
    expect(arrayElementRanges(Buffer.from('{"records":[]}'), 'records')).toEqual([]);
  });

  it('matches JSON.parse on random bodies in any formatting', () => {
    fc.assert(
      fc.property(
        fc.array(fc.dictionary(fc.string(), fc.jsonValue()), { maxLength: 8 }),
        fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
        fc.constantFrom(undefined, 0, 1, 2, '\t', ' \n '),
        (records, other, indent) => {
          const { records: _drop, ...rest } = other;
          const body = Buffer.from(JSON.stringify({ ...rest, records }, null, indent as never));
          const parsed = JSON.parse(body.toString('utf8')) as { records: unknown[] };
          const ranges = arrayElementRanges(body, 'records');
          // Keys with escapes make it give up; otherwise every element is found exactly.
          if (ranges === undefined) {
            expect(Object.keys(rest).some((k) => JSON.stringify(k).includes('\\'))).toBe(true);
            return;
          }
          expect(ranges.map((r) => parseRange(body, r))).toEqual(parsed.records);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('recordLine', () => {
  it('is the record with the added fields, on one line', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.dictionary(fc.constantFrom('sid', 'bucketSid', 'receivedAt', 'firewall'), fc.jsonValue()),
        fc.constantFrom(undefined, 2, '\n'),
        (record, addedRaw, indent) => {
          const added = Object.fromEntries(Object.entries(addedRaw).filter(([k]) => !(k in record)));
          const body = Buffer.from(JSON.stringify({ records: [record] }, null, indent as never));
          const [range] = arrayElementRanges(body, 'records')!;
          const line = recordLine(body, range!, added);
          expect(line.includes(0x0a)).toBe(false);
          // (through JSON both sides: -0 is written as 0)
          expect(JSON.parse(line.toString('utf8'))).toEqual(
            JSON.parse(JSON.stringify({ ...added, ...record })),
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});
