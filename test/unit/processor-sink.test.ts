import { Kafka, logLevel } from 'kafkajs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Block } from '../../services/processor/block-source.js';
import { Decoder, type DecodedRecord } from '../../services/processor/decoder.js';
import { dlq, drop, exclude, ok, type StoredRecord } from '../../services/processor/pipeline.js';
import { encodeKept } from '../../services/processor/record-encoder.js';
import { RequestsSink, SinkBlock } from '../../services/processor/requests.sink.js';
import type { RequestsWriter } from '../../services/processor/requests.writer.js';

// The sink's per-record decisions (which text is stored, drops, excluded counts, dead letters,
// repeats). Its writes (ClickHouse, dead-letter and job topics) run against real chDB and Kafka in
// test/integration/processor-sink.test.ts.

const header = JSON.stringify({ v: 2, accountSid: 'acc_1', bucketSid: 'bkt_1' });
const base = {
  sid: 'req_AAAAAAAAAAAAAAAAAAAAAAAAAAA',
  createdAt: '2026-11-22T10:00:00.000Z',
  receivedAt: '2026-11-22T10:00:00.100Z',
  bucketSid: 'bkt_1',
  request: { method: 'GET', path: '/users/1', body: '{"endpoint":"x"}' },
};

function decoded(line: string): DecodedRecord {
  const out = new Decoder().decode(Buffer.from(`${header}\n${line}`), 0, '0');
  if (out.records.length !== 1) throw new Error(JSON.stringify(out.dead));
  return out.records[0]!;
}

/** The record as a step returns it: a copy of the decoded one with `fields` set. */
const withFields = (d: DecodedRecord, fields: Record<string, unknown>): StoredRecord => ({
  ...d.record,
  ...fields,
});

describe('encodeKept', () => {
  it('adds the header and step fields before the closing brace; each key once', () => {
    const d = decoded(JSON.stringify(base));
    const text = encodeKept(d, withFields(d, { endpoint: '/users/{id}' }), false)!;
    expect(text.toString()).toBe(
      `${JSON.stringify(base).slice(0, -1)},"accountSid":"acc_1","endpoint":"/users/{id}"}`,
    );
    expect(JSON.parse(text.toString())).toEqual({ ...base, accountSid: 'acc_1', endpoint: '/users/{id}' });
  });

  it('returns the line itself when it already holds every added field with the same value', () => {
    const line = JSON.stringify({ ...base, accountSid: 'acc_1', endpoint: '/u/:id' });
    const d = decoded(line);
    expect(encodeKept(d, d.record, false)).toBe(d.line);
  });

  it('undefined (serialise) when the line holds an added field with another value', () => {
    const d = decoded(JSON.stringify({ ...base, endpoint: null }));
    expect(encodeKept(d, withFields(d, { endpoint: '/users/{id}' }), false)).toBeUndefined();
    const other = decoded(JSON.stringify({ ...base, accountSid: 'acc_other' }));
    expect(encodeKept(other, other.record, false)).toBeUndefined();
  });

  it('keeps whitespace after the brace and skips fields a step left undefined', () => {
    const d = decoded(`${JSON.stringify(base)} \r`);
    const text = encodeKept(d, withFields(d, { nothing: undefined }), false)!.toString();
    expect(text).toBe(`${JSON.stringify(base).slice(0, -1)},"accountSid":"acc_1"} \r`);
  });

  it('serialises arrays and strings needing escapes exactly as JSON.stringify', () => {
    const d = decoded(JSON.stringify(base));
    const workflowExecutions = [{ sid: 'wfx_1', note: 'a "quoted"\nline é' }];
    const text = encodeKept(d, withFields(d, { workflowExecutions }), false)!.toString();
    expect(JSON.parse(text).workflowExecutions).toEqual(workflowExecutions);
  });

  it('undefined (serialise) when a step removed a received field or rewrote one in place', () => {
    const d = decoded(JSON.stringify({ ...base, contextSid: 'c' }));
    const { contextSid: _c, ...removed } = d.record;
    expect(encodeKept(d, removed as StoredRecord, false)).toBeUndefined();
    expect(encodeKept(d, withFields(d, { contextSid: 'other' }), false)).toBeUndefined();
  });

  it('a part replaced by a copy with a new member value: written into the line in place', () => {
    const d = decoded(JSON.stringify(base));
    const record = withFields(d, { request: { ...d.record.request, path: '/rewritten' } });
    const text = encodeKept(d, record, false)!.toString();
    expect(text).toBe(
      `${JSON.stringify(base).replace('"/users/1"', '"/rewritten"').slice(0, -1)},"accountSid":"acc_1"}`,
    );
    // A member added to a part: the record serialised.
    const grown = withFields(d, { request: { ...d.record.request, note: 'x' } });
    expect(encodeKept(d, grown, false)).toBeUndefined();
  });

  it('checkLine: a line repeating a key is not stored as received', () => {
    const line = JSON.stringify(base).replace('"method":"GET"', '"method":"PUT","method":"GET"');
    const d = decoded(line);
    expect(encodeKept(d, d.record, false)?.toString()).toBe(`${line.slice(0, -1)},"accountSid":"acc_1"}`);
    expect(encodeKept(d, d.record, true)).toBeUndefined();
  });
});

const block: Block = { topic: 't', partition: 3, range: { min: 5, max: 9 }, messages: [], replay: false };

function sink() {
  const kafka = new Kafka({ clientId: 'sink-test', brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING });
  // add() never writes: no connection and no ClickHouse are used here.
  return new RequestsSink({
    producer: kafka.producer(),
    writer: {} as RequestsWriter,
    log: pino({ level: 'silent' }),
  });
}

describe('RequestsSink.add', () => {
  it('the row stores the spliced line; a record with a new value of a received field: serialised', () => {
    const s = sink();
    const out = new SinkBlock(block);
    const kept = decoded(JSON.stringify(base));
    s.add(out, '7', kept, ok({ ...kept.record, endpoint: '/users/{id}' }), false);
    const red = decoded(JSON.stringify({ ...base, sid: 'req_BBBBBBBBBBBBBBBBBBBBBBBBBBB' }));
    const redacted = { ...red.record, request: { ...red.record.request, body: '[REDACTED]' }, tags: [] };
    s.add(out, '8', red, ok(redacted), false);
    expect(out.rows).toHaveLength(2);
    const [a, b] = out.rows.map((r) => (typeof r.record === 'string' ? r.record : r.record.toString()));
    expect(a).toBe(`${JSON.stringify(base).slice(0, -1)},"accountSid":"acc_1","endpoint":"/users/{id}"}`);
    expect(b).toBe(JSON.stringify(redacted));
    expect(JSON.parse(b!)).toMatchObject({
      accountSid: 'acc_1',
      bucketSid: 'bkt_1',
      request: { body: '[REDACTED]' },
    });
    expect(out.rows.map((r) => [r.kafka_partition, r.kafka_offset])).toEqual([
      [3, 7],
      [3, 8],
    ]);
    expect([...out.sids]).toEqual(['bkt_1/' + base.sid, 'bkt_1/req_BBBBBBBBBBBBBBBBBBBBBBBBBBB']);
  });

  it('a step that rewrites content and returns ok has its change stored', () => {
    const s = sink();
    const out = new SinkBlock(block);
    const d = decoded(JSON.stringify(base));
    const record = { ...d.record, request: { ...d.record.request, path: '/changed' } };
    s.add(out, '5', d, ok(record), false);
    expect(JSON.parse(out.rows[0]!.record.toString()).request.path).toBe('/changed');
    expect(out.rows[0]!.path).toBe('/changed');
  });

  it('drops, exclusions, dead letters and repeats are counted, not stored', () => {
    const s = sink();
    const out = new SinkBlock(block);
    const d = decoded(JSON.stringify(base));
    s.add(out, '5', d, exclude('exc_1'), false);
    s.add(out, '5', d, drop('repeat'), false);
    s.add(out, '6', d, { ...dlq('no good'), record: d.record }, false);
    const badDate = decoded(JSON.stringify({ ...base, createdAt: 'yesterday' }));
    s.add(out, '7', badDate, ok(badDate.record), false);
    expect(out.rows).toEqual([]);
    expect([...out.excluded.values()]).toEqual([
      {
        accountSid: 'acc_1',
        bucketSid: 'bkt_1',
        minute: Date.parse('2026-11-22T10:00:00Z') / 1000,
        excluded: 1,
      },
    ]);
    expect(out.dead.map((x) => [x.reason, x.offset, x.partition])).toEqual([
      ['no good', '6', 3],
      ['row mapping failed: createdAt or receivedAt is not a date-time', '7', 3],
    ]);
    expect(JSON.parse(out.dead[0]!.value)).toMatchObject({ sid: base.sid, accountSid: 'acc_1' });
    expect(s.stats).toMatchObject({ dropped: 2, excluded: 1, duplicates: 0 });
    expect(s.stats.droppedByBucket.get('bkt_1')).toBe(2);

    s.add(out, '8', d, ok(d.record), false);
    expect(s.isRepeat(out, 'bkt_1', base.sid)).toBe(true);
    expect(s.isRepeat(out, 'bkt_1', 'req_other')).toBe(false);
    expect(s.isRepeat(out, 'bkt_2', base.sid)).toBe(false);
    expect(s.stats.duplicates).toBe(1);
  });
});
