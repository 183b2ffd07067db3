import fc from 'fast-check';
import { Kafka, logLevel } from 'kafkajs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Block } from '../../services/processor/block-source.js';
import { NO_RULES, type BucketRules } from '../../services/processor/compiled-rules.js';
import { Decoder, type DecodedRecord } from '../../services/processor/decoder.js';
import { replacedPartsLine } from '../../services/processor/line-splice.js';
import { baseContext, runSteps, type Kept } from '../../services/processor/pipeline.js';
import { rulesReadContent } from '../../services/processor/record-encoder.js';
import { compileRedaction } from '../../services/processor/redaction.js';
import { RequestsSink, SinkBlock } from '../../services/processor/requests.sink.js';
import type { RequestsWriter } from '../../services/processor/requests.writer.js';
import { PREDEFINED_TYPES, compileSensitiveRules } from '../../services/processor/sensitive/index.js';
import {
  LINE_OK,
  LINE_REPEATED_KEY,
  LINE_UNSUPPORTED,
  lineMembers,
} from '../../services/processor/sensitive/prefilter.js';
import { redactStep } from '../../services/processor/steps/redact.step.js';
import { ingestRecord, rng } from '../bench/records.js';

/**
 * A record Shape A redacted is stored as its received line with the new values written in place
 * (services/processor/line-splice.ts), else serialised; one Shape A found nothing in is stored as
 * its line unless the line repeats a key. Either way the stored JSON must be the record the rules
 * saw: checked against serialisation on bench records, and on lines built to mislead (a repeated
 * key hiding a value, an escaped key, a decoy with the same value, white space, Shape B rules).
 */

const header = JSON.stringify({ v: 2, accountSid: 'acc_1', bucketSid: 'bkt_1' });
const block: Block = { topic: 't', partition: 0, range: { min: 0, max: 0 }, messages: [], replay: false };

function decoded(line: string): DecodedRecord {
  const out = new Decoder().decode(Buffer.from(`${header}\n${line}`), 0, '0');
  if (out.records.length !== 1) throw new Error(JSON.stringify(out.dead));
  return out.records[0]!;
}

const sensitive = compileSensitiveRules(
  PREDEFINED_TYPES.map((type, i) => ({ sid: `r${i}`, type, level: 'full' as const, scopes: ['*' as const] })),
);
const shapeA: BucketRules = { ...NO_RULES, sensitive };

function sink() {
  const kafka = new Kafka({ clientId: 'splice-test', brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING });
  return new RequestsSink({
    producer: kafka.producer(),
    writer: {} as RequestsWriter,
    log: pino({ level: 'silent' }),
  });
}

/**
 * What the sink stores for a line under these rules, whether the step changed the record (returned
 * another one) and whether the sink wrote the new values into the line.
 */
function store(
  line: string,
  rules: BucketRules = shapeA,
): { text: string; res: Kept; changed: boolean; spliced: boolean } {
  const d = decoded(line);
  const res = runSteps(d.record, { ...baseContext('acc_1', 'bkt_1'), rules }, [redactStep]);
  if (res.kind !== 'ok') throw new Error(res.kind);
  const changed = res.record !== d.record;
  const spliced = changed && replacedPartsLine(d.line, d.received, res.record) !== undefined;
  const out = new SinkBlock(block);
  sink().add(out, '0', d, res, rulesReadContent(rules));
  const r = out.rows[0]!.record;
  return { text: typeof r === 'string' ? r : r.toString(), res, changed, spliced };
}

const SECRET = 'Bearer abcdefghijklmnop0123456789';
const base = {
  sid: 'req_AAAAAAAAAAAAAAAAAAAAAAAAAAA',
  createdAt: '2026-11-22T10:00:00.000Z',
  receivedAt: '2026-11-22T10:00:00.100Z',
  request: {
    method: 'GET',
    url: 'https://api.example.com/v1/orders?page=2',
    path: '/v1/orders',
    headers: { accept: 'application/json', authorization: SECRET, 'x-forwarded-for': '203.0.113.42' },
    body: '{"sku":"KX47PQ2R9M","name":"alpha"}',
    size: 35,
  },
  response: {
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"ok":true}',
    size: 11,
  },
};

describe('a Shape A redaction written into the received line', () => {
  it('stores the same record as serialising it, on bench records with secrets planted around', () => {
    const r = rng(11);
    let spliced = 0;
    let redacted = 0;
    for (let i = 0; i < 600; i++) {
      const rec = ingestRecord(r, { environments: ['prod'], now: 1_790_000_000_000 }) as typeof base;
      const full = {
        ...rec,
        sid: `req_${String(i).padStart(27, 'A')}`,
        receivedAt: '2026-11-22T10:00:00.100Z',
      };
      if (i % 5 === 1)
        full.request.url += `${full.request.url.includes('?') ? '&' : '?'}email=jane%40example.com`;
      if (i % 5 === 2)
        full.response.headers = { ...full.response.headers, ...{ 'set-cookie': 'session=abc123' } };
      if (i % 5 === 3 && typeof full.response.body === 'string')
        full.response.body = full.response.body.replace(/^\{/, '{"card":"4111 1111 1111 1111",');
      if (i % 7 === 4)
        full.request.headers = { ...full.request.headers, ...{ 'x-note': 'mail jane@example.com' } };
      const line = JSON.stringify(full);
      const got = store(line);
      if (got.changed) redacted++;
      if (got.spliced) spliced++;
      // Serialising the same redacted record is what the sink did before the splice existed.
      const d = decoded(line);
      const res = runSteps(d.record, { ...baseContext('acc_1', 'bkt_1'), rules: shapeA }, [redactStep]);
      const serialised = JSON.parse(JSON.stringify(res.kind === 'ok' ? res.record : null));
      expect(JSON.parse(got.text)).toEqual(serialised);
      for (const s of ['jane@example.com', 'jane%40example.com', '4111 1111 1111 1111', 'session=abc123'])
        expect(got.text.includes(s), `${s} in record ${i}`).toBe(false);
    }
    // Every redacted record had its new values written into its line (none hides a key).
    expect(redacted).toBeGreaterThan(350);
    expect(spliced).toBe(redacted);
  });

  it('writes only the replaced values, the rest of the line as received', () => {
    const line = JSON.stringify(base);
    const got = store(line);
    expect(got.spliced).toBe(true);
    const want = line
      .replace(JSON.stringify(SECRET), '"[REDACTED:authorization]"')
      .replace('"203.0.113.42"', '"[REDACTED:ipv4]"');
    expect(got.text).toBe(`${want.slice(0, -1)},"accountSid":"acc_1","bucketSid":"bkt_1","redacted":true}`);
  });

  const serialised: [string, string][] = [
    [
      'a repeated headers key (the parse keeps the later one)',
      JSON.stringify(base).replace(
        '"headers":{"accept"',
        `"headers":{"authorization":${JSON.stringify(SECRET)}},"headers":{"accept"`,
      ),
    ],
    ['an escaped key', JSON.stringify(base).replace('"headers":{"accept"', '"head\\u0065rs":{"accept"')],
    [
      'a key repeated inside a part no rule changed',
      JSON.stringify({ ...base, response: { ...base.response, headers: { 'set-cookie': 'x' } } }).replace(
        '"set-cookie":"x"',
        `"x-note":"mail jane@example.com","x-note":"hi"`,
      ),
    ],
  ];
  for (const [name, line] of serialised)
    it(`serialises instead: ${name}`, () => {
      const got = store(line);
      expect(got.changed).toBe(true);
      expect(got.spliced).toBe(false);
      const stored = JSON.parse(got.text);
      expect(stored.redacted).toBe(true);
      expect(stored.request.headers.authorization).toBe('[REDACTED:authorization]');
      expect(got.text).not.toContain('abcdefghijklmnop0123456789');
      expect(got.text).not.toContain('jane@example.com');
    });

  const spliced: [string, string][] = [
    [
      'a decoy with the same value elsewhere',
      JSON.stringify({ ...base, tags: [{ key: 'k', value: 'v', headers: base.request.headers }] }),
    ],
    [
      'white space around the members',
      JSON.stringify(base, null, 2).replace(/\n/g, ' ').replace('"headers": {', '"headers" :\t {'),
    ],
    [
      'the same headers in request and response',
      JSON.stringify({ ...base, response: { ...base.response, headers: base.request.headers } }),
    ],
  ];
  for (const [name, line] of spliced)
    it(`writes the values in place despite ${name}`, () => {
      const got = store(line);
      expect(got.spliced).toBe(true);
      const d = decoded(line);
      const res = runSteps(d.record, { ...baseContext('acc_1', 'bkt_1'), rules: shapeA }, [redactStep]);
      expect(JSON.parse(got.text)).toEqual(
        JSON.parse(JSON.stringify(res.kind === 'ok' && res.record !== d.record ? res.record : null)),
      );
      expect(JSON.parse(got.text).request.headers.authorization).toBe('[REDACTED:authorization]');
    });

  it('a record the rules found nothing in: its line, unless the line repeats a key', () => {
    const clean = { ...base, request: { ...base.request, headers: { accept: 'application/json' } } };
    const kept = store(JSON.stringify(clean));
    expect(kept.changed).toBe(false);
    expect(kept.text).toBe(`${JSON.stringify(clean).slice(0, -1)},"accountSid":"acc_1","bucketSid":"bkt_1"}`);
    // The parse keeps "hi"; the line's earlier value, which no rule saw, must not be stored.
    const hiding = JSON.stringify(clean).replace(
      '"accept":"application/json"',
      '"x-note":"mail jane@example.com","x-note":"hi","accept":"application/json"',
    );
    const got = store(hiding);
    expect(got.changed).toBe(false);
    expect(got.text).not.toContain('jane@example.com');
    expect(JSON.parse(got.text).request.headers).toEqual({ 'x-note': 'hi', accept: 'application/json' });
  });

  it('a Shape B rule applied too (on copies): the stored text is the record serialised', () => {
    const b = compileRedaction({
      sid: 'rdc_b',
      accountSid: 'acc_1',
      name: 'b',
      fieldPath: '$.request.headers.accept',
      redactionType: 'mask',
      replacementValue: null,
      buckets: null,
      environments: null,
    });
    if (!b.ok) throw new Error(b.error);
    const rules: BucketRules = { ...shapeA, redactions: [b.rule] };
    const line = JSON.stringify(base);
    const got = store(line, rules);
    expect(got.changed).toBe(true);
    expect(JSON.parse(got.text)).toEqual(JSON.parse(JSON.stringify(got.res.record)));
    expect(JSON.parse(got.text).request.headers.accept).toBe('***********/****');
    expect(got.text).not.toContain('abcdefghijklmnop0123456789');
    // The decoded record and its parts are as received: the rules worked on copies.
    const d = decoded(line);
    runSteps(d.record, { ...baseContext('acc_1', 'bkt_1'), rules }, [redactStep]);
    expect(d.record.request).toEqual(base.request);
  });
});

describe('lineMembers reads any JSON line as JSON.parse does', () => {
  // Strings full of escapes (quotes, backslashes, control characters, non-ASCII) put escapes at
  // every offset of the module's 16-byte blocks.
  const str = fc.string({
    unit: fc.constantFrom('"', '\\', 'a', 'é', '\n', '\u0001', '😀', 'z', '/'),
    maxLength: 40,
  });
  const value = fc.letrec((tie) => ({
    v: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      str,
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie('v'), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 6 }), tie('v'), { maxKeys: 4 }),
    ),
  })).v;
  const part = fc.dictionary(fc.constantFrom('method', 'headers', 'body', 'url', 'size', 'q"x', 'ü'), value, {
    maxKeys: 5,
  });
  const record = fc.record({ sid: str, request: part, response: fc.option(part), tags: value });

  const allKeys = (v: unknown): string[] =>
    v && typeof v === 'object'
      ? Array.isArray(v)
        ? v.flatMap(allKeys)
        : Object.entries(v).flatMap(([k, x]) => [k, ...allKeys(x)])
      : [];

  it('gives every member of request and response at the bytes of its value', () => {
    fc.assert(
      fc.property(record, fc.constantFrom(undefined, 1, '\t'), (rec, space) => {
        const text = JSON.stringify(rec, null, space).replace(/\n/g, ' ');
        const line = Buffer.from(text);
        const { status, members } = lineMembers(line);
        // A key with an escape (`q"x`, at any depth) cannot be compared byte for byte: the pass
        // says it cannot tell instead.
        if (allKeys(rec).some((k) => JSON.stringify(k).includes('\\'))) {
          expect(status).toBe(LINE_UNSUPPORTED);
          return;
        }
        expect(status).toBe(LINE_OK);
        const found: [number, string, unknown][] = [];
        for (let m = 0; m < members!.length; m += 5)
          found.push([
            members![m]!,
            line.toString('utf8', members![m + 1], members![m + 2]),
            JSON.parse(line.toString('utf8', members![m + 3], members![m + 4])),
          ]);
        const want: [number, string, unknown][] = [
          ...Object.entries(rec.request).map(([k, v]): [number, string, unknown] => [1, k, v]),
          ...Object.entries(rec.response ?? {}).map(([k, v]): [number, string, unknown] => [2, k, v]),
        ];
        expect(found).toEqual(JSON.parse(JSON.stringify(want)));
      }),
      { numRuns: 3000, seed: 16 },
    );
  });

  it('finds a repeated key at any depth', () => {
    for (const line of [
      '{"a":1,"a":2}',
      '{"request":{"headers":{"x":1,"x":2}}}',
      '{"t":[{"k":1},{"k":2,"k":3}]}',
      '{"t":[{"k":1},{"k":2}],"t":0}',
    ])
      expect(lineMembers(Buffer.from(line)).status, line).toBe(LINE_REPEATED_KEY);
    expect(lineMembers(Buffer.from('{"t":[{"k":1},{"k":2}],"u":{"k":3}}')).status).toBe(LINE_OK);
  });
});
