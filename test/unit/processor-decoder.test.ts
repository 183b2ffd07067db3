import { describe, expect, it } from 'vitest';
import { Decoder } from '../../services/processor/decoder.js';

const header = (over: Record<string, unknown> = {}) =>
  JSON.stringify({ v: 2, accountSid: 'acc_1', bucketSid: 'bkt_1', ...over });
const line = (sid: string, over: Record<string, unknown> = {}) =>
  JSON.stringify({
    sid,
    createdAt: '2026-11-22T10:00:00.000Z',
    receivedAt: '2026-11-22T10:00:00.100Z',
    bucketSid: 'bkt_1',
    request: { method: 'GET', path: '/a' },
    ...over,
  });
const message = (...lines: string[]) => Buffer.from(lines.join('\n'));

describe('processor decoder (version 2 messages)', () => {
  const decoder = new Decoder();

  it('gives each record with the header account and bucket, its own line and the fields as received', () => {
    const l1 = line('req_1');
    const l2 = line('req_2', { endpoint: '/a/{id}' });
    const out = decoder.decode(message(header(), l1, l2), 3, '17');
    expect(out.dead).toEqual([]);
    expect(out.accountSid).toBe('acc_1');
    expect(out.bucketSid).toBe('bkt_1');
    expect(out.records.map((r) => r.line.toString('utf8'))).toEqual([l1, l2]);
    expect(out.records[0]!.record).toEqual({ ...JSON.parse(l1), accountSid: 'acc_1', bucketSid: 'bkt_1' });
    // `received` is the line's fields before the decoder set accountSid: what the line holds.
    expect(Object.hasOwn(out.records[0]!.received, 'accountSid')).toBe(false);
    expect(out.records[0]!.received.bucketSid).toBe('bkt_1');
    expect(out.records[1]!.received.endpoint).toBe('/a/{id}');
  });

  it('a header that is not JSON or breaks its schema dead-letters the whole message', () => {
    const notJson = message('{not json', line('req_1'));
    expect(decoder.decode(notJson, 0, '5')).toEqual({
      records: [],
      dead: [{ reason: 'message header is not JSON', partition: 0, offset: '5', value: notJson.toString() }],
    });
    const v1 = decoder.decode(message(header({ v: 1 }), line('req_1')), 1, '6');
    expect(v1.records).toEqual([]);
    expect(v1.dead).toHaveLength(1);
    expect(v1.dead[0]!.reason).toMatch(/^message breaks kafkaRequestHeader: \/v /);
  });

  it('a single JSON document (no newline) is read as a header without records', () => {
    const batch = Buffer.from(JSON.stringify({ v: 1, accountSid: 'acc_1', bucketSid: 'bkt_1', records: [] }));
    const out = decoder.decode(batch, 0, '1');
    expect(out.records).toEqual([]);
    expect(out.dead[0]!.reason).toMatch(/^message breaks kafkaRequestHeader/);
    const headOnly = decoder.decode(Buffer.from(header()), 0, '2');
    expect(headOnly).toEqual({ accountSid: 'acc_1', bucketSid: 'bkt_1', records: [], dead: [] });
  });

  it('a bad line dead-letters only itself (its line is the value); empty lines are skipped', () => {
    const good = line('req_ok');
    const noSid = JSON.stringify({ createdAt: 'x', receivedAt: 'y', request: {} });
    const out = decoder.decode(message(header(), '{oops', '', noSid, good, ''), 2, '9');
    expect(out.records.map((r) => r.record.sid)).toEqual(['req_ok']);
    expect(out.dead).toEqual([
      { reason: 'record line is not JSON', partition: 2, offset: '9', value: '{oops' },
      {
        reason: "record breaks kafkaRequestItem:  must have required property 'sid'",
        partition: 2,
        offset: '9',
        value: noSid,
      },
    ]);
  });

  it('keeps multi-byte UTF-8 lines byte for byte', () => {
    const l = line('req_u', { request: { method: 'GET', path: '/é/☃/😀' } });
    const out = decoder.decode(message(header(), l), 0, '0');
    expect(out.records[0]!.line.equals(Buffer.from(l))).toBe(true);
    expect(out.records[0]!.record.request.path).toBe('/é/☃/😀');
  });
});
