import type { ValidateFunction } from 'ajv';
import { validator } from '../shared/schemas.js';
import type { StoredRecord } from './pipeline.js';
import { copyWith } from './record-copy.js';

/** A message or record line the processor cannot use, for the dead-letter topic. */
export interface DeadLetter {
  reason: string;
  partition: number;
  offset: string;
  value: string;
}

/** One record of a message, as parsed, with the account and bucket of the message's header. */
export interface DecodedRecord {
  record: StoredRecord;
  /** the record's JSON text as it came (UTF-8 bytes of its line) */
  line: Buffer;
  /** the line's top-level fields as parsed, before anything set one (a shallow copy) */
  received: Readonly<Record<string, unknown>>;
}

export interface DecodedMessage {
  /** absent when the header is unusable (the whole message is then in `dead`) */
  accountSid?: string;
  bucketSid?: string;
  records: DecodedRecord[];
  dead: DeadLetter[];
}

/** Top-level fields the decoder sets on every record, from the message's header. */
export const HEADER_FIELDS = ['accountSid', 'bucketSid'] as const;

const NEWLINE = 0x0a;

/**
 * Kafka message values of `traffic.requests` (version 2, schemas/request-record.schema.ts): a
 * header line `{"v":2,"accountSid":…,"bucketSid":…}`, then one record per line. A header that is
 * not JSON or breaks its schema dead-letters the whole message; a bad line only itself. Each record
 * gets the header's accountSid and bucketSid.
 */
export class Decoder {
  private readonly validateHeader = validator('kafkaRequestHeader');
  private readonly validateItem = validator('kafkaRequestItem');

  decode(value: Buffer, partition: number, offset: string): DecodedMessage {
    let nl = value.indexOf(NEWLINE);
    if (nl < 0) nl = value.length;
    const head = parseChecked(
      value.toString('utf8', 0, nl),
      this.validateHeader,
      'message header is not JSON',
      'message',
    );
    if ('reason' in head)
      return {
        records: [],
        dead: [{ reason: head.reason, partition, offset, value: value.toString('utf8') }],
      };
    const { accountSid, bucketSid } = head.value as { accountSid: string; bucketSid: string };
    const out: DecodedMessage = { accountSid, bucketSid, records: [], dead: [] };
    for (let start = nl + 1; start < value.length;) {
      let end = value.indexOf(NEWLINE, start);
      if (end < 0) end = value.length;
      if (end > start) {
        const text = value.toString('utf8', start, end);
        const parsed = parseChecked(text, this.validateItem, 'record line is not JSON', 'record');
        if ('reason' in parsed) out.dead.push({ reason: parsed.reason, partition, offset, value: text });
        else {
          const record = parsed.value as StoredRecord;
          const received = copyWith(record);
          record.accountSid = accountSid;
          record.bucketSid = bucketSid;
          out.records.push({ record, line: value.subarray(start, end), received });
        }
      }
      start = end + 1;
    }
    return out;
  }
}

/**
 * JSON text parsed and checked against a schema, or the dead-letter reason: `<notJson>`, or
 * `<noun> breaks <schema $id>: <path> <error>`.
 */
function parseChecked(
  text: string,
  validate: ValidateFunction,
  notJson: string,
  noun: string,
): { value: unknown } | { reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { reason: notJson };
  }
  if (validate(value)) return { value };
  const why = validate.errors?.[0];
  const schema = (validate.schema as { $id?: string }).$id ?? 'its schema';
  return { reason: `${noun} breaks ${schema}: ${why?.instancePath ?? ''} ${why?.message ?? ''}`.trim() };
}
