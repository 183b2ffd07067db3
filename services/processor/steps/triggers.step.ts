import { ok, type Step } from '../pipeline.js';
import { evaluateTriggers } from '../triggers.js';

/**
 * Request/error workflow triggers, last step (the record is final and redacted): each hit becomes
 * an action job and an entry of the record's `workflowExecutions`, written before the insert.
 * Without a hit `workflowExecutions` is null in the record and not reported as added (the API
 * answers a stored record without it with null).
 */
export const triggersStep: Step = (record, ctx) => {
  const { workflows, accountName, bucketName } = ctx.rules;
  const jobs = evaluateTriggers(record, workflows, { accountName, bucketName });
  if (jobs.length === 0) {
    record.workflowExecutions ??= null;
    return ok(record);
  }
  record.workflowExecutions = jobs.map((j) => ({
    sid: j.executionSid,
    workflowSid: j.workflowSid,
    triggerType: j.trigger.type,
  }));
  return ok(record, { jobs, added: ['workflowExecutions'] });
};
