import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import type { PgListener } from '../shared/pg-listener.js';

/**
 * In-memory snapshot of every account's active rules (exclusions, server-side redactions,
 * workflows), loaded from Postgres. Shared by the processor and the scheduler: it knows nothing
 * about how rules are applied; each user passes a `compile` function that turns an account's raw
 * rules into whatever it needs (compiled matchers, cron jobs), once per change, never per record.
 *
 * Freshness: an account is reloaded on the `tapline_rules` NOTIFY (payload = account sid, raised by
 * triggers on the three tables), everything is reloaded every `reloadMs` as a backstop and after the
 * listener reconnects (notifications sent while it was away are lost).
 * Availability: a failed load keeps the last snapshot and is retried, so a Postgres outage never
 * stops the traffic that depends on it.
 */

export const RULES_CHANNEL = 'tapline_rules';

export interface ExclusionRule {
  sid: string;
  accountSid: string;
  name: string;
  pathPattern: string;
  method: string;
  statusCode: number | null;
  /** null (or empty) = every bucket / environment */
  buckets: string[] | null;
  environments: string[] | null;
}

export type RedactionType = 'mask' | 'remove' | 'hash' | 'replace';

export interface RedactionRule {
  sid: string;
  accountSid: string;
  name: string;
  fieldPath: string;
  redactionType: RedactionType;
  replacementValue: string | null;
  buckets: string[] | null;
  environments: string[] | null;
}

export interface WorkflowAction {
  type: string;
  config: Record<string, unknown>;
  order: number;
}

export interface WorkflowRule {
  sid: string;
  accountSid: string;
  environmentSid: string;
  bucketSid: string;
  name: string;
  description: string;
  trigger: { type: string; conditions: Record<string, unknown>[]; schedule?: string };
  actions: WorkflowAction[];
  createdAt: string;
  updatedAt: string | null;
}

/** One account's active rules as stored; only server-side redactions (client ones run in SDKs). */
export interface AccountRules {
  accountSid: string;
  accountName: string;
  /** bucket sid -> name, for workflow job context */
  bucketNames: Map<string, string>;
  exclusions: ExclusionRule[];
  redactions: RedactionRule[];
  workflows: WorkflowRule[];
}

export function emptyRules(accountSid: string, accountName = ''): AccountRules {
  return { accountSid, accountName, bucketNames: new Map(), exclusions: [], redactions: [], workflows: [] };
}

export interface RuleSnapshotOptions<T> {
  pool: pg.Pool;
  listener: PgListener;
  log: Logger;
  /** full reload interval (cfg.rulesReloadMs) */
  reloadMs: number;
  compile: (rules: AccountRules) => T;
}

type ChangeHandler<T> = (accountSid: string, compiled: T | undefined) => void;

export class RuleSnapshot<T> {
  private compiled = new Map<string, T>();
  private raw = new Map<string, AccountRules>();
  private prints = new Map<string, string>();
  private pending = new Set<string>();
  private fullPending = false;
  private chain: Promise<void> = Promise.resolve();
  private flushTimer: NodeJS.Timeout | undefined;
  private reloadTimer: NodeJS.Timeout | undefined;
  private retryMs = 500;
  private stopped = false;
  private changeHandlers: ChangeHandler<T>[] = [];
  /** completed loads (full or per account), for diagnostics and tests */
  loads = 0;
  /** loads that failed (the snapshot was kept) */
  failedLoads = 0;
  lastLoadAt: Date | null = null;

  constructor(private readonly opts: RuleSnapshotOptions<T>) {}

  /** Loads everything once (throws if Postgres is unreachable at start), then follows changes. */
  async start(): Promise<void> {
    this.opts.listener.on(RULES_CHANNEL, (accountSid) => this.refresh(accountSid));
    this.opts.listener.onReconnect(() => this.reloadAll());
    await this.enqueue(() => this.loadAll());
    this.reloadTimer = setInterval(() => this.reloadAll(), this.opts.reloadMs);
    this.reloadTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.reloadTimer) clearInterval(this.reloadTimer);
    if (this.flushTimer) clearTimeout(this.flushTimer);
  }

  /** The compiled rules of an account, or undefined when it has no active rule. */
  get(accountSid: string): T | undefined {
    return this.compiled.get(accountSid);
  }

  rules(accountSid: string): AccountRules | undefined {
    return this.raw.get(accountSid);
  }

  /** Every account with at least one active rule. */
  entries(): IterableIterator<[string, T]> {
    return this.compiled.entries();
  }

  /**
   * Called after an account's rules changed (every notified account; on a full reload only the
   * accounts whose rules differ); `compiled` undefined = it has none left.
   */
  onChange(handler: ChangeHandler<T>): void {
    this.changeHandlers.push(handler);
  }

  /** Schedules a reload of one account; notifications arriving together are loaded together. */
  refresh(accountSid: string): void {
    if (this.stopped || !accountSid) return;
    this.pending.add(accountSid);
    this.scheduleFlush(20);
  }

  reloadAll(): void {
    if (this.stopped) return;
    this.fullPending = true;
    this.scheduleFlush(0);
  }

  /** Resolves when every load queued so far has run (tests, shutdown). */
  async settled(): Promise<void> {
    await this.chain;
  }

  private scheduleFlush(delayMs: number): void {
    if (this.flushTimer || this.stopped) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      void this.enqueue(() => this.flush()).catch(() => undefined);
    }, delayMs);
    this.flushTimer.unref();
  }

  /** NOTE: loads run one at a time, so an older full reload never overwrites a newer account load. */
  private enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.chain.then(work);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async flush(): Promise<void> {
    const full = this.fullPending;
    const accounts = [...this.pending];
    this.fullPending = false;
    this.pending.clear();
    try {
      if (full) await this.loadAll();
      else if (accounts.length) await this.loadAccounts(accounts);
      this.retryMs = 500;
    } catch (err) {
      // Keep serving the last snapshot; retry the same work with backoff.
      this.failedLoads++;
      this.opts.log.warn(
        { err: (err as Error).message, full, accounts: accounts.length, retryMs: this.retryMs },
        'rule reload failed; keeping the last snapshot',
      );
      if (full) this.fullPending = true;
      for (const a of accounts) this.pending.add(a);
      const delay = this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, 5000);
      this.scheduleFlush(delay);
      return;
    }
    // Notifications that arrived during this load were queued by refresh(); load them next.
    if (this.pending.size || this.fullPending) this.scheduleFlush(0);
  }

  private async loadAll(): Promise<void> {
    const loaded = await this.query(null);
    const changed: string[] = [];
    for (const sid of this.raw.keys()) if (!loaded.has(sid)) changed.push(sid);
    const compiled = new Map<string, T>();
    const prints = new Map<string, string>();
    for (const [sid, rules] of loaded) {
      // Unchanged accounts keep their compiled rules: a periodic reload costs one query, not a recompile.
      const print = fingerprint(rules);
      const prev = this.compiled.get(sid);
      if (prev !== undefined && this.prints.get(sid) === print) compiled.set(sid, prev);
      else {
        compiled.set(sid, this.compileSafe(rules));
        changed.push(sid);
      }
      prints.set(sid, print);
    }
    this.raw = loaded;
    this.compiled = compiled;
    this.prints = prints;
    this.loads++;
    this.lastLoadAt = new Date();
    this.opts.log.debug({ accounts: loaded.size, changed: changed.length }, 'rules reloaded');
    for (const sid of changed) this.emit(sid);
  }

  private async loadAccounts(accountSids: string[]): Promise<void> {
    const loaded = await this.query(accountSids);
    for (const sid of accountSids) {
      const rules = loaded.get(sid);
      if (rules) {
        this.raw.set(sid, rules);
        this.compiled.set(sid, this.compileSafe(rules));
        this.prints.set(sid, fingerprint(rules));
      } else {
        this.raw.delete(sid);
        this.compiled.delete(sid);
        this.prints.delete(sid);
      }
    }
    this.loads++;
    this.lastLoadAt = new Date();
    this.opts.log.debug({ accounts: accountSids.length }, 'account rules reloaded');
    for (const sid of accountSids) this.emit(sid);
  }

  private compileSafe(rules: AccountRules): T {
    // compile must not throw for one bad rule; if it throws anyway, fall back to no rules for the
    // account rather than stopping every account's reload.
    try {
      return this.opts.compile(rules);
    } catch (err) {
      this.opts.log.error({ err, accountSid: rules.accountSid }, 'compiling account rules failed');
      return this.opts.compile(emptyRules(rules.accountSid, rules.accountName));
    }
  }

  private emit(accountSid: string): void {
    for (const h of this.changeHandlers) {
      try {
        h(accountSid, this.compiled.get(accountSid));
      } catch (err) {
        this.opts.log.error({ err, accountSid }, 'rule change handler failed');
      }
    }
  }

  /** Reads the active rules of the given accounts (null = all) in one consistent read. */
  private async query(accountSids: string[] | null): Promise<Map<string, AccountRules>> {
    const client = await this.opts.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const filter = accountSids ? 'AND account_sid = ANY($1)' : '';
      const params = accountSids ? [accountSids] : [];
      const [x, r, w] = [
        await client.query<ExclusionRow>(
          `SELECT sid, account_sid, name, path_pattern, method, status_code, buckets, environments
           FROM exclusions WHERE is_active ${filter} ORDER BY created_at, sid`,
          params,
        ),
        await client.query<RedactionRow>(
          `SELECT sid, account_sid, name, field_path, redaction_type, replacement_value, buckets, environments
           FROM redactions WHERE is_active AND redact_at = 'server' ${filter} ORDER BY created_at, sid`,
          params,
        ),
        await client.query<WorkflowRow>(
          `SELECT sid, account_sid, environment_sid, bucket_sid, name, description, trigger, actions,
                  created_at, updated_at
           FROM workflows WHERE is_active ${filter} ORDER BY created_at, sid`,
          params,
        ),
      ];
      const out = new Map<string, AccountRules>();
      const of = (sid: string) => {
        let a = out.get(sid);
        if (!a) out.set(sid, (a = emptyRules(sid)));
        return a;
      };
      for (const row of x.rows) of(row.account_sid).exclusions.push(toExclusion(row));
      for (const row of r.rows) of(row.account_sid).redactions.push(toRedaction(row));
      for (const row of w.rows) of(row.account_sid).workflows.push(toWorkflow(row));
      if (out.size) {
        const sids = [...out.keys()];
        const accounts = await client.query<{ sid: string; name: string }>(
          'SELECT sid, name FROM accounts WHERE sid = ANY($1)',
          [sids],
        );
        for (const a of accounts.rows) out.get(a.sid)!.accountName = a.name;
        const buckets = await client.query<{ sid: string; account_sid: string; name: string }>(
          'SELECT sid, account_sid, name FROM buckets WHERE account_sid = ANY($1) ORDER BY sid',
          [sids],
        );
        for (const b of buckets.rows) out.get(b.account_sid)!.bucketNames.set(b.sid, b.name);
      }
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}

/** Equal for equal rule sets (rows come ordered), so a periodic reload can skip unchanged accounts. */
function fingerprint(r: AccountRules): string {
  return JSON.stringify([r.accountName, [...r.bucketNames], r.exclusions, r.redactions, r.workflows]);
}

interface ExclusionRow {
  sid: string;
  account_sid: string;
  name: string;
  path_pattern: string;
  method: string;
  status_code: number | null;
  buckets: string[] | null;
  environments: string[] | null;
}

interface RedactionRow {
  sid: string;
  account_sid: string;
  name: string;
  field_path: string;
  redaction_type: RedactionType;
  replacement_value: string | null;
  buckets: string[] | null;
  environments: string[] | null;
}

interface WorkflowRow {
  sid: string;
  account_sid: string;
  environment_sid: string;
  bucket_sid: string;
  name: string;
  description: string;
  trigger: unknown;
  actions: unknown;
  created_at: Date;
  updated_at: Date | null;
}

const scope = (v: string[] | null): string[] | null => (v && v.length ? v : null);

function toExclusion(r: ExclusionRow): ExclusionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    name: r.name,
    pathPattern: r.path_pattern,
    method: r.method,
    statusCode: r.status_code,
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

function toRedaction(r: RedactionRow): RedactionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    name: r.name,
    fieldPath: r.field_path,
    redactionType: r.redaction_type,
    replacementValue: r.replacement_value,
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function toWorkflow(r: WorkflowRow): WorkflowRule {
  const t = isObject(r.trigger) ? r.trigger : {};
  const conditions = Array.isArray(t.conditions) ? t.conditions.filter(isObject) : [];
  const actions = (Array.isArray(r.actions) ? r.actions.filter(isObject) : [])
    .map((a) => ({
      type: typeof a.type === 'string' ? a.type : '',
      config: isObject(a.config) ? a.config : {},
      order: typeof a.order === 'number' ? a.order : 0,
    }))
    .sort((a, b) => a.order - b.order);
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    environmentSid: r.environment_sid,
    bucketSid: r.bucket_sid,
    name: r.name,
    description: r.description,
    trigger: {
      type: typeof t.type === 'string' ? t.type : '',
      conditions,
      ...(typeof t.schedule === 'string' ? { schedule: t.schedule } : {}),
    },
    actions,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at ? r.updated_at.toISOString() : null,
  };
}
