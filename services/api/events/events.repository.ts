import type pg from 'pg';
import { newSid } from '../../shared/ids.js';
import { validation } from '../../shared/errors.js';
import { OwnedRows } from '../tables/account-table.js';
import { iso, offsetOf, pageOf, type ListResult } from '../tables/pagination.js';

/** Event marker as the API answers it (docs/events-mcp.md). */
export interface EventMarker {
  sid: string;
  accountSid: string;
  bucketSids: string[];
  environmentSids: string[];
  type: string;
  name: string;
  description: string | null;
  source: string | null;
  metadata: Record<string, unknown> | null;
  startedAt: string;
  endedAt: string | null;
  createdAt: string;
  updatedAt: string | null;
}

export interface EventInput {
  type?: string;
  name?: string;
  description?: string | null;
  source?: string | null;
  metadata?: Record<string, unknown> | null;
  bucketSids?: string[];
  environmentSids?: string[];
  startedAt?: string;
  endedAt?: string | null;
}

export interface EventFilters {
  type?: string;
  startTime?: string | Date;
  endTime?: string | Date;
  /** events shown on this bucket: its sid or `*` in `bucketSids` */
  bucketSid?: string;
  /** events shown in this environment: its sid or `*` in `environmentSids` */
  environmentSid?: string;
  /** MCP tokens limited to some buckets: events on any of them or on `*` */
  anyOfBuckets?: string[];
  /** events of this `source`, exactly */
  source?: string;
}

export interface EventListQuery {
  page: number;
  limit: number;
  sort?: string;
  order?: 'asc' | 'desc';
}

interface Row {
  sid: string;
  account_sid: string;
  bucket_sids: string[];
  environment_sids: string[];
  type: string;
  name: string;
  description: string | null;
  source: string | null;
  metadata: Record<string, unknown> | null;
  started_at: Date;
  ended_at: Date | null;
  created_at: Date;
  updated_at: Date | null;
}

const toEvent = (r: Row): EventMarker => ({
  sid: r.sid,
  accountSid: r.account_sid,
  bucketSids: r.bucket_sids,
  environmentSids: r.environment_sids,
  type: r.type,
  name: r.name,
  description: r.description,
  source: r.source,
  metadata: r.metadata,
  startedAt: r.started_at.toISOString(),
  endedAt: iso(r.ended_at),
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

/**
 * WHERE clause of the filters. Range rule (docs/events-mcp.md): an event covers
 * [startedAt, endedAt ?? startedAt] and is returned when that interval meets [startTime, endTime].
 */
function whereOf(accountSid: string, f: EventFilters): { where: string; values: unknown[] } {
  const values: unknown[] = [accountSid];
  const conds = ['account_sid = $1'];
  const add = (sql: (n: string) => string, value: unknown) => {
    values.push(value);
    conds.push(sql(`$${values.length}`));
  };
  if (f.type) add((n) => `type = ${n}`, f.type);
  if (f.startTime) add((n) => `COALESCE(ended_at, started_at) >= ${n}::timestamptz`, f.startTime);
  if (f.endTime) add((n) => `started_at <= ${n}::timestamptz`, f.endTime);
  if (f.bucketSid) add((n) => `(${n} = ANY(bucket_sids) OR '*' = ANY(bucket_sids))`, f.bucketSid);
  if (f.environmentSid)
    add((n) => `(${n} = ANY(environment_sids) OR '*' = ANY(environment_sids))`, f.environmentSid);
  if (f.source) add((n) => `source = ${n}`, f.source);
  if (f.anyOfBuckets?.length)
    add((n) => `(bucket_sids && ${n}::text[] OR '*' = ANY(bucket_sids))`, f.anyOfBuckets);
  return { where: conds.join(' AND '), values };
}

const SORT_COLUMNS: Record<string, string> = { startedAt: 'started_at', createdAt: 'created_at' };

/** Columns a PUT may set, by API field: a whitelist, so field names never reach SQL from input. */
const UPDATABLE: Record<keyof EventInput, string> = {
  type: 'type',
  name: 'name',
  description: 'description',
  source: 'source',
  metadata: 'metadata',
  bucketSids: 'bucket_sids',
  environmentSids: 'environment_sids',
  startedAt: 'started_at',
  endedAt: 'ended_at',
};

export class EventsRepository extends OwnedRows<Row, EventMarker> {
  constructor(pool: pg.Pool) {
    super(pool, { table: 'events', kind: 'event', what: 'Event', map: toEvent }, ['account_sid']);
  }

  async list(accountSid: string, f: EventFilters, q: EventListQuery): Promise<ListResult<EventMarker>> {
    const { where, values } = whereOf(accountSid, f);
    const col = SORT_COLUMNS[q.sort ?? 'startedAt'] ?? 'started_at';
    const dir = q.order === 'asc' ? 'ASC' : 'DESC';
    const r = await this.pool
      .query<Row>(
        `SELECT * FROM events WHERE ${where}
         ORDER BY ${col} ${dir}, sid ${dir} LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
        [...values, q.limit + 1, offsetOf(q)],
      )
      .catch(rethrowBadValue);
    return pageOf(r.rows.map(toEvent), q.limit);
  }

  get(accountSid: string, sid: string): Promise<EventMarker> {
    return this.getOwned([accountSid], sid);
  }

  async create(accountSid: string, input: EventInput & { type: string; name: string }): Promise<EventMarker> {
    await this.checkBuckets(accountSid, input.bucketSids);
    const startedAt = input.startedAt ? new Date(input.startedAt) : new Date();
    checkInterval(startedAt, input.endedAt ? new Date(input.endedAt) : null);
    const r = await this.pool
      .query<Row>(
        `INSERT INTO events (sid, account_sid, bucket_sids, environment_sids, type, name, description, source,
                           metadata, started_at, ended_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
        [
          newSid('event'),
          accountSid,
          dedupe(input.bucketSids ?? ['*']),
          dedupe(input.environmentSids ?? ['*']),
          input.type,
          input.name,
          input.description ?? null,
          input.source ?? null,
          input.metadata ?? null,
          startedAt,
          input.endedAt ?? null,
        ],
      )
      .catch(rethrowBadValue);
    return toEvent(r.rows[0]!);
  }

  /** Partial update: only the provided fields change; the interval is checked on the merged row. */
  async update(accountSid: string, sid: string, input: EventInput): Promise<EventMarker> {
    this.requireSid(sid);
    for (const f of ['type', 'name', 'startedAt', 'bucketSids', 'environmentSids'] as const) {
      if (input[f] === null) throw validation(`${f} cannot be null`, { [`body.${f}`]: 'cannot be null' });
    }
    await this.checkBuckets(accountSid, input.bucketSids);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const cur = await client.query<Row>(
        'SELECT * FROM events WHERE account_sid = $1 AND sid = $2 FOR UPDATE',
        [accountSid, sid],
      );
      const row = cur.rows[0];
      if (!row) throw this.notFound();
      const startedAt = input.startedAt !== undefined ? new Date(input.startedAt) : row.started_at;
      const endedAt =
        input.endedAt !== undefined
          ? input.endedAt === null
            ? null
            : new Date(input.endedAt)
          : row.ended_at;
      checkInterval(startedAt, endedAt);
      const sets: string[] = [];
      const values: unknown[] = [accountSid, sid];
      for (const [field, column] of Object.entries(UPDATABLE) as [keyof EventInput, string][]) {
        let v = input[field];
        if (v === undefined) continue;
        if (field === 'bucketSids' || field === 'environmentSids') v = dedupe(v as string[]);
        values.push(v);
        sets.push(`${column} = $${values.length}`);
      }
      let out = row;
      if (sets.length) {
        const r = await client
          .query<Row>(
            `UPDATE events SET ${sets.join(', ')}, updated_at = now()
           WHERE account_sid = $1 AND sid = $2 RETURNING *`,
            values,
          )
          .catch(rethrowBadValue);
        out = r.rows[0]!;
      }
      await client.query('COMMIT');
      return toEvent(out);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  delete(accountSid: string, sid: string): Promise<void> {
    return this.deleteOwned([accountSid], sid);
  }

  /** Every sid in `bucketSids` must be `*` or a bucket of the account: 400 naming the strangers. */
  async checkBuckets(accountSid: string, bucketSids: string[] | undefined): Promise<void> {
    const sids = dedupe((bucketSids ?? []).filter((s) => s !== '*'));
    if (!sids.length) return;
    const r = await this.pool.query<{ sid: string }>(
      'SELECT sid FROM buckets WHERE account_sid = $1 AND sid = ANY($2::text[])',
      [accountSid, sids],
    );
    const known = new Set(r.rows.map((x) => x.sid));
    const unknown = sids.filter((s) => !known.has(s));
    if (unknown.length) {
      throw validation('bucketSids names buckets that do not exist in this account', {
        'body.bucketSids': `unknown bucket sid(s): ${unknown.join(', ')}`,
      });
    }
  }
}

function checkInterval(startedAt: Date, endedAt: Date | null): void {
  if (endedAt && endedAt.getTime() < startedAt.getTime())
    throw validation('endedAt precedes startedAt', { 'body.endedAt': 'must not precede startedAt' });
}

const dedupe = (xs: string[]) => [...new Set(xs)];

/** Postgres data errors that only a client's value can cause (NUL bytes, dates out of range). */
const BAD_VALUE_CODES = new Set(['22P05', '22021', '22007', '22008', '22P02', '54000']);

/** A value the JSON Schema let through but Postgres cannot store is the caller's 400, never a 500. */
export function rethrowBadValue(err: unknown): never {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && BAD_VALUE_CODES.has(code))
    throw validation('A value cannot be stored (out of range or contains a NUL character)', {
      body: 'a value is out of range or contains a NUL character',
    });
  throw err;
}

/**
 * Events shown on a chart of `[start, end]` (the metrics series) for a bucket, any of several
 * buckets and/or an environment: the same overlap and scoping rules as the list endpoint, oldest
 * first, at most `max`.
 */
export async function listEventsInRange(
  pool: pg.Pool,
  accountSid: string,
  range: Pick<EventFilters, 'bucketSid' | 'environmentSid' | 'anyOfBuckets'> & {
    start: string | Date;
    end: string | Date;
  },
  max = 1000,
): Promise<EventMarker[]> {
  const { where, values } = whereOf(accountSid, {
    startTime: range.start,
    endTime: range.end,
    bucketSid: range.bucketSid,
    environmentSid: range.environmentSid,
    anyOfBuckets: range.anyOfBuckets,
  });
  const r = await pool.query<Row>(
    `SELECT * FROM events WHERE ${where} ORDER BY started_at ASC, sid ASC LIMIT $${values.length + 1}`,
    [...values, max],
  );
  return r.rows.map(toEvent);
}
