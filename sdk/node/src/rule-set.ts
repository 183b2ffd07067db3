import type { QueueItem } from './queue.js';
import {
  compileExclusion,
  compileRedaction,
  excludedBy,
  redactRecord,
  type CompiledExclusion,
  type CompiledRedaction,
} from './rules.js';
import {
  byteSize,
  compileCriteria,
  compileSensitive,
  excludedByCriteria,
  hasSize,
  redactSensitiveRules,
  sensitiveWithout,
  type CompiledCriteria,
  type CompiledSensitive,
  type SkippedRule,
} from './content-rules.js';
import type {
  CapturedRecord,
  RemoteExclusionCriteria,
  RemoteExclusionRule,
  RemoteRedactionRule,
} from './types.js';

/** What `RuleSet.update` found that the core reports. */
export interface RulesUpdate {
  /** criteria and sensitive-data rules that do not compile */
  skipped: SkippedRule[];
  /** field redaction rules (applied in the host) that were not understood */
  unreadRedactions: number;
}

/** `lineOf`'s answer for a queued record a rule now excludes. */
export const EXCLUDED = 'excluded';

/**
 * The client rules in force (field redactions, path exclusions, criteria exclusions, sensitive-data
 * redactions) and their versions. Each change of the rules starts a new version; a line queued
 * under an older version gets, at send time, the rules it has not had yet, and never the same rule
 * twice.
 */
export class RuleSet {
  /** bumped whenever the client rules change: queued lines made under older rules get the new ones */
  version = 0;
  private print = '';
  /** the redaction rules (by key) of each rules version, so a line never gets the same rule twice */
  private readonly versionRules = new Map<number, Set<string>>([[0, new Set()]]);
  redactions: CompiledRedaction[] = [];
  exclusions: CompiledExclusion[] = [];
  /** criteria exclusions and sensitive-data redactions (content-rules.ts) */
  criteria: CompiledCriteria[] = [];
  sensitive: CompiledSensitive = compileSensitive([]);
  /**
   * the criteria and sensitive-data rules still to apply to a line made under an older rules
   * version, by that version
   */
  private readonly sensitiveLeft = new Map<number, CompiledSensitive>();

  /** `onError` counts an evaluator's error, which keeps the record rather than dropping it. */
  constructor(private readonly onError: (err: unknown) => void) {}

  /** Compiles the rules of a `GET /v1/buckets/{b}/sdk` answer; every field may be missing or malformed. */
  update(body: Record<string, unknown>): RulesUpdate {
    const rdc = Array.isArray(body?.redactionRules) ? (body.redactionRules as RemoteRedactionRule[]) : [];
    const xcl = Array.isArray(body?.exclusionRules) ? (body.exclusionRules as RemoteExclusionRule[]) : [];
    const xca = Array.isArray(body?.exclusionCriteria)
      ? (body.exclusionCriteria as RemoteExclusionCriteria[])
      : [];
    const sen = Array.isArray(body?.sensitiveRules) ? (body.sensitiveRules as unknown[]) : [];
    // Only `client` rules are applied here; `server` ones are the processor's (never twice).
    const clientSide = body?.redactAt === undefined || body.redactAt === 'client';
    this.redactions = clientSide
      ? rdc.map((r) => compileRedaction(r)).filter((r): r is CompiledRedaction => r !== null)
      : [];
    this.exclusions = xcl.map((x) => compileExclusion(x)).filter((x): x is CompiledExclusion => x !== null);
    // Criteria and sensitive-data rules: compiled by the server's own evaluators; a rule that does
    // not compile is skipped.
    const criteria = compileCriteria(xca);
    this.criteria = criteria.rules;
    this.sensitive = compileSensitive(clientSide ? sen : []);
    const print = JSON.stringify([rdc, xcl, clientSide, xca, clientSide ? sen : []]);
    if (print !== this.print) {
      this.print = print;
      this.version++;
      this.versionRules.set(
        this.version,
        new Set([...this.redactions.map((r) => r.key), ...this.sensitive.keys]),
      );
      this.sensitiveLeft.clear();
    }
    return {
      skipped: [...criteria.skipped, ...this.sensitive.skipped],
      unreadRedactions: (clientSide ? rdc.length : 0) - this.redactions.length,
    };
  }

  /** Whether any client rule is in force. */
  get any(): boolean {
    return this.exclusions.length > 0 || this.readsRecords;
  }

  /**
   * Whether a rule reads or rewrites a whole record (criteria exclusions, redactions): while none
   * does, a record's JSON line can be written without building the record object.
   */
  get readsRecords(): boolean {
    return this.criteria.length > 0 || this.redactions.length > 0 || this.sensitive.compiled !== null;
  }

  /** Whether a path exclusion drops a call (cheap; runs before the record is built). */
  excludes(method: string, path: string, status: number | null, env: string): boolean {
    return excludedBy(this.exclusions, method, path, status, env) !== undefined;
  }

  /** Whether a criteria exclusion drops the record; an evaluator error keeps it (and is counted). */
  excludedByCriteria(record: CapturedRecord, env: string): boolean {
    if (this.criteria.length === 0) return false;
    try {
      return excludedByCriteria(this.criteria, record, env) !== undefined;
    } catch (err) {
      this.onError(err);
      return false;
    }
  }

  /** Redacts a newly captured record in place with all the rules in force. */
  redactNew(record: CapturedRecord, env: string): void {
    this.redact(record, env, this.redactions, this.sensitive);
  }

  /**
   * A queued record's JSON bytes under the current rules, or EXCLUDED when a rule now excludes it.
   * A line made under the current rules (or with no rules in force) is sent as it is; otherwise it
   * gets the rules it has not had yet. Throws on a line that does not parse.
   */
  lineOf<T extends CapturedRecord>(q: QueueItem<T>, env: string): Buffer | typeof EXCLUDED {
    const bytes = q.slab ? q.slab.subarray(q.off, q.off! + q.len!) : undefined;
    // Rules changed since the line was made (or were unknown): applied again at send time.
    if (bytes && (q.version === this.version || !this.any)) return bytes;
    const r = q.record ?? (JSON.parse(bytes!.toString('utf8')) as CapturedRecord);
    if (this.excludes(r.request.method, r.request.path, r.response?.statusCode ?? null, env)) return EXCLUDED;
    if (this.excludedByCriteria(r, env)) return EXCLUDED;
    const applied = q.record ? undefined : this.versionRules.get(q.version ?? 0);
    this.redact(
      r,
      env,
      applied ? this.redactions.filter((x) => !applied.has(x.key)) : this.redactions,
      applied ? this.sensitiveFor(q.version ?? 0, applied) : this.sensitive,
    );
    return Buffer.from(JSON.stringify(r));
  }

  /**
   * Redacts a record in place: the field-path rules, then the sensitive-data rules (the server's
   * order, docs/rules.md). A record the sensitive-data rules change is marked `redacted` and keeps
   * the sizes it was captured with.
   */
  private redact(
    record: CapturedRecord,
    env: string,
    fieldRules: CompiledRedaction[],
    sensitive: CompiledSensitive,
  ): void {
    if (sensitive.compiled === null) {
      redactRecord(record, fieldRules, env);
      return;
    }
    // Sizes as received, taken before a field rule rewrites a body (only for a part without one).
    const received: { request?: number; response?: number } = {};
    if (fieldRules.length) {
      if (!hasSize(record.request.size)) received.request = byteSize(record.request.body);
      if (record.response && !hasSize(record.response.size))
        received.response = byteSize(record.response.body);
    }
    redactRecord(record, fieldRules, env);
    redactSensitiveRules(record, sensitive, received);
  }

  /**
   * The criteria and sensitive-data rules a line made under `version` has not had yet (compiled
   * once per version).
   */
  private sensitiveFor(version: number, applied: ReadonlySet<string>): CompiledSensitive {
    let left = this.sensitiveLeft.get(version);
    if (!left) {
      left = sensitiveWithout(this.sensitive, applied);
      this.sensitiveLeft.set(version, left);
    }
    return left;
  }
}
