import { ok, type Step } from '../pipeline.js';
import { evaluateTriggers } from '../triggers.js';
import { copyWith } from '../record-copy.js';

/**
 * Request/error workflow triggers, last step (the record is final and redacted): each hit becomes
 * an action job and an entry of the record's `workflowExecutions` (a copy of the record holds it),
 * stored with the record. Without a hit the record goes on as it came: the API answers a stored
 * record without `workflowExecutions` with null.
 */
export const triggersStep: Step = (record, ctx) => {
  const { workflows, accountName, bucketName } = ctx.rules;
  const jobs = evaluateTriggers(record, workflows, { accountName, bucketName });
  if (jobs.length === 0) return ok(record);
  const workflowExecutions = jobs.map((j) => ({
    sid: j.executionSid,
    workflowSid: j.workflowSid,
    triggerType: j.trigger.type,
  }));
  return ok(copyWith(record, { workflowExecutions }), { jobs });
};
