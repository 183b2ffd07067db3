import type { Logger } from '../shared/logger.js';
import type { Pool } from '../shared/postgres.js';

/** An active workflow whose trigger the scheduler evaluates, with the names its jobs carry. */
export interface TimedWorkflow {
  sid: string;
  accountSid: string;
  bucketSid: string;
  environmentSid: string;
  name: string;
  accountName: string;
  bucketName: string;
  type: 'threshold' | 'schedule' | 'slo_burn' | 'regression';
  /** the stored trigger object (`conditions`, `schedule`, optional `timezone`, `sloSid`) */
  trigger: Record<string, unknown>;
  /** the distinct `type`s of its actions */
  actionTypes: string[];
}

interface Row {
  sid: string;
  account_sid: string;
  bucket_sid: string;
  environment_sid: string;
  name: string;
  account_name: string;
  bucket_name: string;
  trigger: Record<string, unknown>;
  action_types: string[] | null;
}

const SELECT = `SELECT w.sid, w.account_sid, w.bucket_sid, w.environment_sid, w.name, w.trigger,
    a.name AS account_name, b.name AS bucket_name,
    (SELECT array_agg(DISTINCT x->>'type') FROM jsonb_array_elements(w.actions) x) AS action_types
  FROM workflows w
  JOIN accounts a ON a.sid = w.account_sid
  JOIN buckets b ON b.sid = w.bucket_sid
  WHERE w.is_active AND w.trigger->>'type' IN ('threshold', 'schedule', 'slo_burn', 'regression')`;

/**
 * The scheduler's snapshot of active threshold and schedule workflows, per account. Reloads are
 * serialised, so a full reload can never overwrite a newer per-account reload with older rows.
 */
export class WorkflowDirectory {
  private byAccount = new Map<string, TimedWorkflow[]>();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly pg: Pool,
    private readonly onChange: () => void,
    private readonly log: Logger,
  ) {}

  all(type?: TimedWorkflow['type']): TimedWorkflow[] {
    const out: TimedWorkflow[] = [];
    for (const list of this.byAccount.values())
      for (const w of list) if (!type || w.type === type) out.push(w);
    return out;
  }

  reloadAll(): Promise<void> {
    return this.enqueue(async () => {
      const r = await this.pg.query<Row>(SELECT);
      const next = new Map<string, TimedWorkflow[]>();
      for (const row of r.rows) {
        const w = toWorkflow(row);
        next.set(w.accountSid, [...(next.get(w.accountSid) ?? []), w]);
      }
      this.byAccount = next;
    });
  }

  reloadAccount(accountSid: string): Promise<void> {
    return this.enqueue(async () => {
      const r = await this.pg.query<Row>(`${SELECT} AND w.account_sid = $1`, [accountSid]);
      if (r.rows.length) this.byAccount.set(accountSid, r.rows.map(toWorkflow));
      else this.byAccount.delete(accountSid);
    });
  }

  private enqueue(fn: () => Promise<void>): Promise<void> {
    const run = this.queue.then(async () => {
      await fn();
      this.onChange();
    });
    this.queue = run.catch((err: Error) => this.log.warn({ err: err.message }, 'workflow reload failed'));
    return run;
  }
}

const TIMED_TYPES = ['threshold', 'schedule', 'slo_burn', 'regression'] as const;

function toWorkflow(r: Row): TimedWorkflow {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    bucketSid: r.bucket_sid,
    environmentSid: r.environment_sid,
    name: r.name,
    accountName: r.account_name,
    bucketName: r.bucket_name,
    type: TIMED_TYPES.find((t) => t === r.trigger.type) ?? 'threshold',
    trigger: r.trigger,
    actionTypes: r.action_types ?? [],
  };
}
