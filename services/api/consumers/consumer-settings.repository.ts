import type pg from 'pg';
import type { IdentificationSource } from '../../../schemas/consumers.schema.js';
import type { Override } from './consumer-labels.js';

/** A source with its defaults written out, as stored and answered (schemas/consumers.schema.ts). */
function withDefaults(s: IdentificationSource): IdentificationSource {
  switch (s.type) {
    case 'header':
      return { type: 'header', name: s.name, hash: s.hash ?? true };
    case 'bearer':
      return { type: 'bearer' };
    case 'jwtClaim':
      return {
        type: 'jwtClaim',
        header: s.header ?? 'Authorization',
        claim: s.claim,
        ...(s.groupClaim !== undefined ? { groupClaim: s.groupClaim } : {}),
      };
    case 'query':
      return { type: 'query', name: s.name, hash: s.hash ?? false };
  }
}

/**
 * What is set about consumers through the API, in Postgres (docs/consumers.md): each bucket's
 * identification sources, and the names and groups given with `PUT …/consumers/{id}`, each with
 * the instant it was set (the last one written wins over a label a record carried).
 */
export class ConsumerSettingsRepository {
  constructor(protected readonly pool: pg.Pool) {}

  async getIdentification(accountSid: string, bucketSid: string) {
    const r = await this.pool.query<{ sources: IdentificationSource[]; updated_at: Date }>(
      'SELECT sources, updated_at FROM consumer_identification WHERE account_sid = $1 AND bucket_sid = $2',
      [accountSid, bucketSid],
    );
    const row = r.rows[0];
    return { bucketSid, sources: row?.sources ?? [], updatedAt: row ? row.updated_at.toISOString() : null };
  }

  async putIdentification(accountSid: string, bucketSid: string, given: IdentificationSource[]) {
    const sources = given.map(withDefaults);
    const r = await this.pool.query<{ updated_at: Date }>(
      `INSERT INTO consumer_identification (account_sid, bucket_sid, sources, updated_at)
       VALUES ($1, $2, $3, now())
       ON CONFLICT (bucket_sid) DO UPDATE SET sources = EXCLUDED.sources, updated_at = now()
       RETURNING updated_at`,
      [accountSid, bucketSid, JSON.stringify(sources)],
    );
    return { bucketSid, sources, updatedAt: r.rows[0]!.updated_at.toISOString() };
  }

  /** The names and groups set through the API for an account (only those of `ids` when given). */
  async overrides(accountSid: string, ids?: readonly string[]): Promise<Override[]> {
    const r = await this.pool.query<{
      consumer_id: string;
      name: string | null;
      name_set_at: Date | null;
      group_name: string | null;
      group_set_at: Date | null;
    }>(
      `SELECT consumer_id, name, name_set_at, group_name, group_set_at FROM consumers
       WHERE account_sid = $1 AND (name IS NOT NULL OR group_name IS NOT NULL)
         AND ($2::text[] IS NULL OR consumer_id = ANY($2::text[]))
       ORDER BY consumer_id`,
      [accountSid, ids ?? null],
    );
    return r.rows.map((o) => ({
      id: o.consumer_id,
      name: o.name,
      nameAt: o.name_set_at?.getTime() ?? -1,
      group: o.group_name,
      groupAt: o.group_set_at?.getTime() ?? -1,
    }));
  }

  /** Sets a name and/or group (null clears the one set here); absent fields stay as they are. */
  async update(
    accountSid: string,
    consumerId: string,
    body: { name?: string | null; group?: string | null },
  ) {
    const setName = body.name !== undefined;
    const setGroup = body.group !== undefined;
    await this.pool.query(
      `INSERT INTO consumers (account_sid, consumer_id, name, name_set_at, group_name, group_set_at)
       VALUES ($1, $2, $3, CASE WHEN $4::boolean AND $3::text IS NOT NULL THEN now() END,
               $5, CASE WHEN $6::boolean AND $5::text IS NOT NULL THEN now() END)
       ON CONFLICT (account_sid, consumer_id) DO UPDATE SET
         name = CASE WHEN $4::boolean THEN EXCLUDED.name ELSE consumers.name END,
         name_set_at = CASE WHEN $4::boolean THEN EXCLUDED.name_set_at ELSE consumers.name_set_at END,
         group_name = CASE WHEN $6::boolean THEN EXCLUDED.group_name ELSE consumers.group_name END,
         group_set_at = CASE WHEN $6::boolean THEN EXCLUDED.group_set_at ELSE consumers.group_set_at END`,
      [accountSid, consumerId, setName ? body.name : null, setName, setGroup ? body.group : null, setGroup],
    );
  }
}
