import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import type { PgListener } from '../shared/pg-listener.js';
import type { Level, RuleScope } from './sensitive/index.js';
import type { WorkflowAction as SchemaWorkflowAction } from '../../schemas/workflow.schema.js';
import type { IdentificationSource } from '../../schemas/consumers.schema.js';
import type { RedactionType } from '../shared/rules.js';
import type { EndpointTemplateRule } from '../shared/endpoint-pattern.js';

/**
 * In-memory snapshot of every account's active rules (exclusions and redactions of both shapes,
 * workflows), loaded from Postgres for the processor. It knows nothing about how rules are applied:
 * the processor passes a `compile` function that turns an account's raw rules into compiled
 * matchers, once per change, never per record.
 *
 * Freshness: an account is reloaded on the `tapline_rules` NOTIFY (payload = account sid, raised by
 * triggers on the rule tables), everything is reloaded every `reloadMs` as a backstop and after the
 * listener reconnects (notifications sent while it was away are lost).
 * Availability: a failed load keeps the last snapshot and is retried, so a Postgres outage never
 * stops the traffic that depends on it.
 */

export const RULES_CHANNEL = 'tapline_rules';

/** Path exclusion: path x method x status. */
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

/** Criteria exclusion: `criteria` in the stream-view search language. */
export interface CriteriaExclusionRule {
  sid: string;
  accountSid: string;
  criteria: string;
  buckets: string[] | null;
  environments: string[] | null;
}

export type { RedactionType };

/** Field redaction: a field path and what to do with the field. */
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

/** Sensitive-data redaction: a predefined or custom type found wherever it appears (sensitive/). */
export interface SensitiveRedactionRule {
  sid: string;
  accountSid: string;
  type: string;
  pattern: string | null;
  applyTo: 'key' | 'value' | null;
  level: Level;
  scopes: RuleScope[] | null;
  buckets: string[] | null;
  environments: string[] | null;
}

/** A workflow action as read from Postgres: the schema's, with `type` as stored (not checked here). */
export type WorkflowAction = Pick<SchemaWorkflowAction, 'config' | 'order'> & { type: string };

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

/**
 * One account's active rules as stored (enabled, not deleted). Field redactions: `server` ones
 * only (client ones run in SDKs; a `hash` applied twice would hash the hash). Sensitive-data redactions:
 * both `redactAt` values, since the server applies client rules again as a safety net (a rule
 * applied twice changes nothing more).
 */
export interface AccountRules {
  accountSid: string;
  accountName: string;
  /** bucket sid -> name, for workflow job context */
  bucketNames: Map<string, string>;
  exclusions: ExclusionRule[];
  criteriaExclusions: CriteriaExclusionRule[];
  redactions: RedactionRule[];
  sensitiveRedactions: SensitiveRedactionRule[];
  workflows: WorkflowRule[];
  /** bucket sid -> its consumer identification sources in order (docs/consumers.md) */
  identification: Map<string, IdentificationSource[]>;
  /** bucket sid -> its endpoint template rules in order (docs/processing.md) */
  endpointTemplates: Map<string, EndpointTemplateRule[]>;
}

export function emptyRules(accountSid: string, accountName = ''): AccountRules {
  return {
    accountSid,
    accountName,
    bucketNames: new Map(),
    exclusions: [],
    criteriaExclusions: [],
    redactions: [],
    sensitiveRedactions: [],
    workflows: [],
    identification: new Map(),
    endpointTemplates: new Map(),
  };
}

export interface RuleSnapshotOptions<T> {
  pool: pg.Pool;
  listener: PgListener;
  log: Logger;
  /** full reload interval (cfg.rulesReloadMs) */
  reloadMs: number;
  compile: (rules: AccountRules) => T;
}

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
  /** loads that failed (the snapshot was kept) */
  failedLoads = 0;

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

  /** The account's rules as loaded, or undefined when it has no active rule. */
  rules(accountSid: string): AccountRules | undefined {
    return this.raw.get(accountSid);
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

  private scheduleFlush(delayMs: number): void {
    if (this.flushTimer || this.stopped) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      void this.enqueue(() => this.flush()).catch(() => undefined);
    }, delayMs);
    this.flushTimer.unref();
  }

  /** Loads run one at a time, so an older full reload never overwrites a newer account load. */
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
    const compiled = new Map<string, T>();
    const prints = new Map<string, string>();
    for (const [sid, rules] of loaded) {
      // Unchanged accounts keep their compiled rules: a periodic reload costs one query, not a recompile.
      const print = fingerprint(rules);
      const prev = this.compiled.get(sid);
      if (prev !== undefined && this.prints.get(sid) === print) compiled.set(sid, prev);
      else compiled.set(sid, this.compileSafe(rules));
      prints.set(sid, print);
    }
    this.raw = loaded;
    this.compiled = compiled;
    this.prints = prints;
    this.opts.log.debug({ accounts: loaded.size }, 'rules reloaded');
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
    this.opts.log.debug({ accounts: accountSids.length }, 'account rules reloaded');
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

  /** Reads the active rules of the given accounts (null = all) in one consistent read. */
  private async query(accountSids: string[] | null): Promise<Map<string, AccountRules>> {
    const client = await this.opts.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const filter = accountSids ? 'AND account_sid = ANY($1)' : '';
      const params = accountSids ? [accountSids] : [];
      // Path and field rows keep their columns; criteria and sensitive-data rows (migration 012) hold
      // criteria / type fields.
      const x = await client.query<ExclusionRow>(
        `SELECT sid, account_sid, shape, name, path_pattern, method, status_code, criteria, buckets, environments
         FROM exclusions WHERE is_active AND deleted_at IS NULL ${filter} ORDER BY created_at, sid`,
        params,
      );
      const r = await client.query<RedactionRow>(
        `SELECT sid, account_sid, shape, name, field_path, redaction_type, replacement_value, type, pattern,
                apply_to, level, scopes, buckets, environments
         FROM redactions
         WHERE is_active AND deleted_at IS NULL AND (shape = 'A' OR redact_at = 'server') ${filter}
         ORDER BY created_at, sid`,
        params,
      );
      const w = await client.query<WorkflowRow>(
        `SELECT sid, account_sid, environment_sid, bucket_sid, name, description, trigger, actions,
                created_at, updated_at
         FROM workflows WHERE is_active ${filter} ORDER BY created_at, sid`,
        params,
      );
      const ids = await client.query<{ account_sid: string; bucket_sid: string; sources: unknown }>(
        `SELECT account_sid, bucket_sid, sources FROM consumer_identification
         WHERE jsonb_array_length(sources) > 0 ${filter} ORDER BY bucket_sid`,
        params,
      );
      const t = await client.query<{
        account_sid: string;
        bucket_sid: string;
        sid: string;
        pattern: string;
        method: string | null;
      }>(
        `SELECT account_sid, bucket_sid, sid, pattern, method FROM endpoint_templates
         WHERE true ${filter} ORDER BY bucket_sid, created_at, sid`,
        params,
      );
      const out = new Map<string, AccountRules>();
      const of = (sid: string) => {
        let a = out.get(sid);
        if (!a) out.set(sid, (a = emptyRules(sid)));
        return a;
      };
      for (const row of x.rows) {
        const a = of(row.account_sid);
        if (row.shape === 'A') a.criteriaExclusions.push(toCriteriaExclusion(row));
        else a.exclusions.push(toExclusion(row));
      }
      for (const row of r.rows) {
        const a = of(row.account_sid);
        if (row.shape === 'A') a.sensitiveRedactions.push(toSensitiveRedaction(row));
        else a.redactions.push(toRedaction(row));
      }
      for (const row of w.rows) of(row.account_sid).workflows.push(toWorkflow(row));
      // Stored by the API after validation (schemas/consumers.schema.ts).
      for (const row of ids.rows)
        if (Array.isArray(row.sources))
          of(row.account_sid).identification.set(row.bucket_sid, row.sources as IdentificationSource[]);
      for (const row of t.rows) {
        const byBucket = of(row.account_sid).endpointTemplates;
        const list = byBucket.get(row.bucket_sid) ?? [];
        list.push({ sid: row.sid, pattern: row.pattern, method: row.method });
        byBucket.set(row.bucket_sid, list);
      }
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
  return JSON.stringify([
    r.accountName,
    [...r.bucketNames],
    r.exclusions,
    r.criteriaExclusions,
    r.redactions,
    r.sensitiveRedactions,
    r.workflows,
    [...r.identification],
    [...r.endpointTemplates],
  ]);
}

interface ExclusionRow {
  sid: string;
  account_sid: string;
  shape: 'A' | 'B';
  name: string | null;
  path_pattern: string | null;
  method: string;
  status_code: number | null;
  criteria: string | null;
  buckets: string[] | null;
  environments: string[] | null;
}

interface RedactionRow {
  sid: string;
  account_sid: string;
  shape: 'A' | 'B';
  name: string | null;
  field_path: string | null;
  redaction_type: RedactionType | null;
  replacement_value: string | null;
  type: string | null;
  pattern: string | null;
  apply_to: 'key' | 'value' | null;
  level: Level | null;
  scopes: string[] | null;
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
    name: r.name ?? '',
    pathPattern: r.path_pattern ?? '',
    method: r.method,
    statusCode: r.status_code,
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

function toCriteriaExclusion(r: ExclusionRow): CriteriaExclusionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    criteria: r.criteria ?? '',
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

function toRedaction(r: RedactionRow): RedactionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    name: r.name ?? '',
    fieldPath: r.field_path ?? '',
    // A NULL type (a row the API should not have stored) fails compileRedaction: the rule is skipped.
    redactionType: r.redaction_type ?? ('' as RedactionType),
    replacementValue: r.replacement_value,
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

function toSensitiveRedaction(r: RedactionRow): SensitiveRedactionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    type: r.type ?? '',
    pattern: r.pattern,
    applyTo: r.apply_to,
    // A NULL level fails compilation: the rule is skipped with a warning, never applied half-way.
    level: r.level ?? ('' as Level),
    scopes: scope(r.scopes) as RuleScope[] | null,
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
