import type pg from 'pg';
import { newSid } from '../../shared/ids.js';
import { notFound } from '../../shared/errors.js';
import { AccountTable } from '../tables/account-table.js';
import { iso } from '../tables/pagination.js';

export interface Bucket {
  sid: string;
  accountSid: string;
  name: string;
  verifySslCerts: boolean;
  appIsConnected: boolean;
  createdAt: string;
  updatedAt: string | null;
}

interface Row {
  sid: string;
  account_sid: string;
  name: string;
  verify_ssl_certs: boolean;
  app_is_connected: boolean;
  created_at: Date;
  updated_at: Date | null;
}

const toBucket = (r: Row): Bucket => ({
  sid: r.sid,
  accountSid: r.account_sid,
  name: r.name,
  verifySslCerts: r.verify_ssl_certs,
  appIsConnected: r.app_is_connected,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

export const BUCKET_SORTS = ['createdAt', 'name'] as const;

export class BucketsRepository extends AccountTable<Row, Bucket> {
  constructor(pool: pg.Pool) {
    super(pool, {
      table: 'buckets',
      sortColumns: { createdAt: 'created_at', name: 'name' },
      map: toBucket,
      what: 'Bucket',
    });
  }

  async create(accountSid: string, input: { name: string; verifySslCerts?: boolean }): Promise<Bucket> {
    const r = await this.pool.query<Row>(
      `INSERT INTO buckets (sid, account_sid, name, verify_ssl_certs) VALUES ($1, $2, $3, $4) RETURNING *`,
      [newSid('bucket'), accountSid, input.name, input.verifySslCerts ?? true],
    );
    return toBucket(r.rows[0]!);
  }

  async update(
    accountSid: string,
    sid: string,
    input: { name: string; verifySslCerts: boolean },
  ): Promise<Bucket> {
    const r = await this.pool.query<Row>(
      `UPDATE buckets SET name = $3, verify_ssl_certs = $4, updated_at = now()
       WHERE account_sid = $1 AND sid = $2 RETURNING *`,
      [accountSid, sid, input.name, input.verifySslCerts],
    );
    if (!r.rows[0]) throw notFound('Bucket');
    return toBucket(r.rows[0]);
  }
}
