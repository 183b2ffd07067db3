import { describe, expect, it } from 'vitest';
import { api, http, ingest, makeRecord, newAccount, recentDay, testEnv, waitFor } from '../helpers/client.js';

const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('ingest fidelity', () => {
  it('SDK wire format: rejected lists every invalid call by its index in the array sent', async () => {
    const acct = await newAccount();
    const ok = (path: string) => ({
      request: { url: `https://api.example.com${path}`, method: 'GET' },
      response: { status: 200, responseTime: 5 },
    });
    // Index 1 fails the wire format's own check (no method); index 3 passes it but the record it
    // maps to does not (a createdAt that is not a date): both must be reported where they were sent.
    const calls = [
      ok('/a'),
      { request: { url: 'https://api.example.com/b' } },
      ok('/c'),
      { ...ok('/d'), request: { url: 'https://api.example.com/d', method: 'GET', received: 'not-a-date' } },
      ok('/e'),
    ];
    const res = await http<{ accepted: number; rejected: { index: number; error: { code: string } }[] }>(
      'POST',
      `${testEnv().ingestUrl}/`,
      { token: acct.apiToken, body: calls, headers: { 'api-traffic-bucket-sid': acct.bucketSid } },
    );
    expect(res.status).toBe(202);
    expect(res.body.accepted).toBe(3);
    expect(res.body.rejected.map((r) => r.index)).toEqual([1, 3]);
    for (const r of res.body.rejected) expect(r.error.code).toBe('VALIDATION_ERROR');
  });

  it('stores and answers every client timestamp as UTC with milliseconds', async () => {
    const acct = await newAccount();
    const day = recentDay();
    const res = await ingest(acct.bucketSid, acct.apiToken, [
      makeRecord({ createdAt: `${day}T12:00:00+02:00`, receivedAt: `${day}T10:00:01.5Z` }),
      makeRecord({ createdAt: `${day}T10:00:02.123456Z` }),
    ]);
    expect(res.status).toBe(202);
    const records = await waitFor(async () => {
      const l = await api(acct.apiToken).get<{ records: { createdAt: string; receivedAt: string }[] }>(
        `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests?startDate=${day}T00:00:00Z&sort=createdAt&order=asc`,
      );
      return l.body.records.length === 2 ? l.body.records : undefined;
    });
    expect(records.map((r) => r.createdAt)).toEqual([`${day}T10:00:00.000Z`, `${day}T10:00:02.123Z`]);
    expect(records[0]!.receivedAt).toBe(`${day}T10:00:01.500Z`);
    for (const r of records) expect(r.receivedAt).toMatch(ISO_MS_Z);
  });
});
