import { describe, expect, it } from 'vitest';
import { api, newAccount } from '../helpers/client.js';

/** `GET /v1/accounts/{a}/events?source=…` (the dashboard's events page filters by source). */
describe('event markers filtered by source', () => {
  it('lists only the markers of the given source, combined with type and range', async () => {
    const acct = await newAccount();
    const c = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/events`;
    const startedAt = new Date(Date.now() - 60_000).toISOString();
    for (const [type, name, source] of [
      ['deployment', 'ci deploy', 'ci'],
      ['incident', 'ci incident', 'ci'],
      ['deployment', 'manual deploy', 'dashboard'],
      ['deployment', 'no source', undefined],
    ] as const) {
      const r = await c.post(base, { type, name, startedAt, ...(source ? { source } : {}) });
      expect(r.status, r.text).toBe(201);
    }
    type L = { records: { name: string }[] };
    const names = async (q: string) =>
      ((await c.get<L>(`${base}?${q}`)).body.records.map((e) => e.name) ?? []).sort();
    expect(await names('source=ci')).toEqual(['ci deploy', 'ci incident']);
    expect(await names('source=ci&type=deployment')).toEqual(['ci deploy']);
    expect(await names('source=dashboard')).toEqual(['manual deploy']);
    expect(await names('source=CI')).toEqual([]);
    expect((await names('')).length).toBe(4);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    expect(await names(`source=ci&startTime=${encodeURIComponent(later)}`)).toEqual([]);
    expect((await c.get(`${base}?source=`)).status).toBe(400);
  });
});
