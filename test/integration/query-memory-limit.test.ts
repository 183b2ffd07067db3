import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../services/api/app.js';
import {
  createClickHouse,
  migrateClickHouse,
  queryLimits,
  withQuerySettings,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import { CredentialStore } from '../../services/shared/credentials.js';
import { storeSetRecords } from '../bench/large-set.js';
import { newAccount, testPool, type TestAccount } from '../helpers/client.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * A read that needs more than its memory share (CLICKHOUSE_QUERY_MEMORY_BYTES) is refused with a
 * 400 in the error envelope, and the service goes on answering: the API is built on a chDB of its
 * own (as `npm start` runs it, the reads inside the service's process) holding 200,000 stored
 * records, once with a 1 MiB share and once with the default.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-query-memory-'));
const log = pino({ level: 'silent' });
const ROWS = 200_000;

let ch: ClickHouseClient;
let credentials: CredentialStore;
let acct: TestAccount;
const apps: FastifyInstance[] = [];

async function app(env: Record<string, string>): Promise<FastifyInstance> {
  const cfg = parseConfig({ SECRETS_KEY: 'ab'.repeat(32), ...env });
  const a = await buildApp({
    cfg,
    log,
    pg: testPool(),
    ch: withQuerySettings(ch, queryLimits(cfg.limits).api),
    credentials,
    ready: async () => ({}),
  });
  await a.ready();
  apps.push(a);
  return a;
}

beforeAll(async () => {
  const chCfg = embeddedClickHouse(dir);
  ch = createClickHouse(chCfg);
  await migrateClickHouse(ch, chCfg, log);
  acct = await newAccount();
  await storeSetRecords(ch, acct, ROWS);
  credentials = new CredentialStore(testPool(), log);
}, 180_000);

afterAll(async () => {
  for (const a of apps) await a.close();
  credentials?.stop();
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a read over its memory share', () => {
  it('is refused with a 400 in the envelope; with the default share the same read answers', async () => {
    // A search sorted by duration, 20 pages deep: every match is read and sorted (a newest-first
    // page stops after a few granules, which at 1 MiB each fit in any share).
    const search = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests?q=${encodeURIComponent('path:/v1/orders/* duration:>50')}&sort=duration&limit=100&page=20`;
    const headers = { authorization: `Bearer ${acct.apiToken}` };

    const small = await app({ CLICKHOUSE_QUERY_MEMORY_BYTES: String(1024 * 1024) });
    const refused = await small.inject({ method: 'GET', url: search, headers });
    expect(refused.statusCode, refused.body).toBe(400);
    expect(refused.json()).toEqual({
      success: false,
      error: {
        code: 'VALIDATION_ERROR',
        message: 'The query went over its memory limit: narrow the time range or the filters',
        details: { query: 'exceeds the memory limit' },
      },
    });
    // The engine and the service go on: a read within the share still answers.
    const cheap = await small.inject({
      method: 'GET',
      url: `/v1/accounts/${acct.accountSid}/buckets`,
      headers,
    });
    expect(cheap.statusCode, cheap.body).toBe(200);

    const standard = await app({});
    const answered = await standard.inject({ method: 'GET', url: search, headers });
    expect(answered.statusCode, answered.body).toBe(200);
    expect((answered.json() as { records: unknown[] }).records.length).toBeGreaterThan(0);
  }, 120_000);
});
