import type { ActionJob } from '../../schemas/action-job.schema.js';
import { newSid } from '../shared/ids.js';
import type { TimedWorkflow } from './workflow.directory.js';

/**
 * An action job for a hit of a scheduler-evaluated trigger (threshold, schedule, slo_burn, regression). There is no request behind it: request,
 * response and timings carry nulls and empty objects, so their template variables render empty.
 */
export function timedJob(
  wf: TimedWorkflow,
  trigger: {
    type: 'threshold' | 'schedule' | 'slo_burn' | 'regression';
    message: string;
    status?: 'firing' | 'resolved';
  },
  metric?: { value: number | null; threshold: number | null; timeWindow: string },
  /** what the trigger adds to the context: the consumer of a per-consumer threshold, the SLO, the release */
  extra: Pick<ActionJob['context'], 'slo' | 'release' | 'consumer'> = {},
): ActionJob {
  return {
    v: 1,
    executionSid: newSid('execution'),
    accountSid: wf.accountSid,
    workflowSid: wf.sid,
    bucketSid: wf.bucketSid,
    environmentSid: wf.environmentSid,
    trigger,
    requestSid: null,
    createdAt: new Date().toISOString(),
    context: {
      request: { method: null, path: null, headers: {}, body: null, query: {} },
      response: { statusCode: null, headers: {}, body: null, size: null },
      timings: { duration: null, responseTime: null },
      bucket: { sid: wf.bucketSid, name: wf.bucketName },
      account: { name: wf.accountName },
      // Environments have no name of their own (docs/auth.md): the sid stands for it.
      environment: { name: wf.environmentSid },
      ...(metric ? { metric } : {}),
      ...extra,
    },
  };
}
