import type { PoolClient } from 'pg';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { Pool } from '../shared/postgres.js';

/**
 * Scheduler state in Postgres (006_scheduler.sql). Every claim is one atomic statement whose
 * WHERE re-checks after the row lock, so of two replicas claiming the same thing exactly one wins.
 */
export class TriggerStateRepository {
  constructor(private readonly pg: Pool) {}

  /** Session advisory lock per job name, held on `client` until `unlock`. */
  async tryLock(client: PoolClient, name: string): Promise<boolean> {
    const r = await client.query<{ ok: boolean }>(
      "SELECT pg_try_advisory_lock(hashtextextended('tapline.scheduler:' || $1, 0)) AS ok",
      [name],
    );
    return r.rows[0]?.ok === true;
  }

  async unlock(client: PoolClient, name: string): Promise<void> {
    await client.query("SELECT pg_advisory_unlock(hashtextextended('tapline.scheduler:' || $1, 0))", [name]);
  }

  /** A static job's cron slot: true for the first replica to claim it. */
  async claimSlot(jobName: string, slot: Date): Promise<boolean> {
    const r = await this.pg.query(
      `INSERT INTO scheduler_runs AS s (job_name, last_slot) VALUES ($1, $2)
       ON CONFLICT (job_name) DO UPDATE SET last_slot = EXCLUDED.last_slot, updated_at = now()
       WHERE s.last_slot < EXCLUDED.last_slot
       RETURNING 1`,
      [jobName, slot],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /** A schedule workflow's tick: true for the first replica to claim it. */
  async claimTick(workflowSid: string, accountSid: string, slot: Date): Promise<boolean> {
    const r = await this.pg.query(
      `INSERT INTO workflow_trigger_state AS s (workflow_sid, account_sid, last_fired_at) VALUES ($1, $2, $3)
       ON CONFLICT (workflow_sid) DO UPDATE SET last_fired_at = EXCLUDED.last_fired_at, updated_at = now()
       WHERE s.last_fired_at IS NULL OR s.last_fired_at < EXCLUDED.last_fired_at
       RETURNING 1`,
      [workflowSid, accountSid, slot],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Records one threshold evaluation (last value, result, time) and, when the result differs from
   * the previous one, since when it holds (`result_since`: the Alerts page's firing/resolved since).
   * Returns whether the workflow's alert is open (fired and not resolved since).
   */
  async recordEvaluation(
    workflowSid: string,
    accountSid: string,
    slot: Date,
    value: number | null,
    result: boolean,
  ): Promise<boolean> {
    const r = await this.pg.query<{ firing: boolean }>(
      `INSERT INTO workflow_trigger_state AS s
         (workflow_sid, account_sid, last_evaluated_at, last_value, last_result, result_since)
         VALUES ($1, $2, $3, $4, $5, $3)
       ON CONFLICT (workflow_sid) DO UPDATE SET last_evaluated_at = EXCLUDED.last_evaluated_at,
         last_value = EXCLUDED.last_value, last_result = EXCLUDED.last_result,
         result_since = CASE WHEN s.last_result IS DISTINCT FROM EXCLUDED.last_result OR s.result_since IS NULL
           THEN EXCLUDED.last_evaluated_at ELSE s.result_since END,
         updated_at = now()
       RETURNING firing`,
      [workflowSid, accountSid, slot, value, result],
    );
    return r.rows[0]?.firing === true;
  }

  /**
   * The cooldown: a threshold workflow fires at `slot` only when it never fired or last fired at
   * least `windowSeconds` before. Call after recordEvaluation (the row exists). A fire opens the
   * alert (`firing`), which claimResolve closes.
   */
  async claimFire(workflowSid: string, slot: Date, windowSeconds: number): Promise<boolean> {
    const r = await this.pg.query(
      `UPDATE workflow_trigger_state SET last_fired_at = $2, firing = true, updated_at = now()
       WHERE workflow_sid = $1
         AND (last_fired_at IS NULL OR last_fired_at <= $2::timestamptz - make_interval(secs => $3))
       RETURNING 1`,
      [workflowSid, slot, windowSeconds],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Per-consumer threshold (docs/consumers.md): opens the consumer's alert and answers true when
   * it was not open, so a breach fires once; false while it stays open.
   */
  async claimConsumerFire(workflowSid: string, consumerId: string, slot: Date): Promise<boolean> {
    const r = await this.pg.query(
      `INSERT INTO consumer_threshold_state AS s (workflow_sid, consumer_id, firing, fired_at)
         VALUES ($1, $2, true, $3)
       ON CONFLICT (workflow_sid, consumer_id) DO UPDATE SET firing = true, fired_at = EXCLUDED.fired_at
         WHERE NOT s.firing
       RETURNING 1`,
      [workflowSid, consumerId, slot],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * A slo_burn breach: true for the one replica that opens the alert (it was not open). The alert
   * stays open, and fires no more, until claimResolve closes it after recovery.
   */
  async claimBreach(workflowSid: string, slot: Date): Promise<boolean> {
    const r = await this.pg.query(
      `UPDATE workflow_trigger_state SET last_fired_at = $2, firing = true, updated_at = now()
       WHERE workflow_sid = $1 AND NOT firing RETURNING 1`,
      [workflowSid, slot],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /** Gives a consumer's claim back when its job could not be queued (the next evaluation fires). */
  async unclaimConsumerFire(workflowSid: string, consumerId: string): Promise<void> {
    await this.pg.query(
      'UPDATE consumer_threshold_state SET firing = false WHERE workflow_sid = $1 AND consumer_id = $2',
      [workflowSid, consumerId],
    );
  }

  /** Closes the alerts of the workflow's consumers whose condition no longer holds. */
  async clearConsumerFires(workflowSid: string, stillBreaching: readonly string[]): Promise<void> {
    await this.pg.query(
      `UPDATE consumer_threshold_state SET firing = false
       WHERE workflow_sid = $1 AND firing AND NOT (consumer_id = ANY($2::text[]))`,
      [workflowSid, stillBreaching],
    );
  }

  /** Undoes claimBreach when the job could not be queued: the next evaluation tries again. */
  async unclaimBreach(workflowSid: string): Promise<void> {
    await this.pg.query(
      'UPDATE workflow_trigger_state SET firing = false, updated_at = now() WHERE workflow_sid = $1',
      [workflowSid],
    );
  }

  /** The execution as `pending` before its job is queued: the log shows it even while no runner runs. */
  async recordQueued(job: ActionJob): Promise<void> {
    await this.pg.query(
      `INSERT INTO workflow_executions
         (sid, account_sid, workflow_sid, bucket_sid, trigger_type, request_sid, status, detail, created_at)
       VALUES ($1, $2, $3, $4, $5, NULL, 'pending', $6, $7)
       ON CONFLICT (sid) DO NOTHING`,
      [
        job.executionSid,
        job.accountSid,
        job.workflowSid,
        job.bucketSid,
        job.trigger.type,
        JSON.stringify({ trigger: job.trigger, actions: [] }),
        job.createdAt,
      ],
    );
  }

  /** The job could not be put on Kafka: the pending execution ends as failed with the reason. */
  async recordQueueFailure(executionSid: string, error: string): Promise<void> {
    await this.pg.query(
      `UPDATE workflow_executions SET status = 'failed', error = $2, finished_at = now(), updated_at = now()
       WHERE sid = $1 AND status = 'pending'`,
      [executionSid, error.slice(0, 1000)],
    );
  }

  /**
   * Undoes claimFire when the job could not be produced (the previous fire was ≥ a window ago).
   * `firing` goes back to what it was before the claim.
   */
  async unclaimFire(workflowSid: string, slot: Date, wasFiring: boolean): Promise<void> {
    await this.pg.query(
      `UPDATE workflow_trigger_state SET last_fired_at = NULL, firing = $3, updated_at = now()
       WHERE workflow_sid = $1 AND last_fired_at = $2`,
      [workflowSid, slot, wasFiring],
    );
  }

  /**
   * The recovery of an open alert: true for the one replica that closes it (the condition was
   * found false after a fire). Undone by unclaimResolve when the resolved job cannot be queued.
   */
  async claimResolve(workflowSid: string): Promise<boolean> {
    const r = await this.pg.query(
      `UPDATE workflow_trigger_state SET firing = false, updated_at = now()
       WHERE workflow_sid = $1 AND firing RETURNING 1`,
      [workflowSid],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async unclaimResolve(workflowSid: string): Promise<void> {
    await this.pg.query(
      'UPDATE workflow_trigger_state SET firing = true, updated_at = now() WHERE workflow_sid = $1',
      [workflowSid],
    );
  }
}
