import { identify } from '../consumer-identification.js';
import { ok, type Step } from '../pipeline.js';
import { copyWith } from '../record-copy.js';

/**
 * Consumer identification (docs/consumers.md), before redaction so a header a rule redacts still
 * identifies: a record without a `consumer` of its own gets the first one its bucket's sources
 * find. A record's own consumer wins; a bucket without sources costs one check.
 */
export const identifyStep: Step = (record, ctx) => {
  const rules = ctx.rules.identification;
  if (rules === null || record.consumer != null) return ok(record);
  const consumer = identify(rules, record.request);
  return consumer ? ok(copyWith(record, { consumer })) : ok(record);
};
