import { describe, expect, it } from 'vitest';
import { listEventsInRange } from '../../services/api/events/events.repository.js';
import { api, newAccount, testPool, type TestAccount } from '../helpers/client.js';
import { mcpToken, scopedToken } from '../helpers/scoped-token.js';

type Ev = Record<string, unknown> & { sid: string; name: string };
type List = { hasMore: boolean; records: Ev[] };

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

function details(body: unknown): Record<string, string> {
  return (body as { error: { details: Record<string, string> } }).error.details;
}

async function secondBucket(acct: TestAccount): Promise<string> {
  const res = await api(acct.apiToken).post(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'second' });
  expect(res.status).toBe(201);
  return res.body.sid as string;
}

describe('event markers', () => {
  it('creates with defaults, reads, updates partially (closing an incident) and deletes', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/events`;
    const before = Date.now();

    const point = await a.post<Ev>(base, { type: 'deployment', name: 'v1.2.3' });
    expect(point.status).toBe(201);
    expect(point.body).toMatchObject({
      accountSid: acct.accountSid,
      type: 'deployment',
      name: 'v1.2.3',
      bucketSids: ['*'],
      environmentSids: ['*'],
      description: null,
      source: null,
      metadata: null,
      endedAt: null,
      updatedAt: null,
    });
    expect(point.body.sid).toMatch(/^evt_[A-Za-z0-9]{27}$/);
    expect(point.body.startedAt).toMatch(ISO_MS);
    expect(point.body.createdAt).toMatch(ISO_MS);
    expect(Date.parse(point.body.startedAt as string)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(point.body.startedAt as string)).toBeLessThanOrEqual(Date.now() + 1000);

    const metadata = { commit: 'abc123', pr: 42, tags: ['a', 'b'], nested: { ok: true, n: null } };
    const incident = await a.post<Ev>(base, {
      type: 'incident',
      name: 'DB outage',
      description: 'primary failed over',
      source: 'github-actions',
      metadata,
      bucketSids: [acct.bucketSid],
      environmentSids: ['prod01'],
      startedAt: '2026-03-01T12:00:00+02:00',
    });
    expect(incident.status).toBe(201);
    expect(incident.body).toMatchObject({
      description: 'primary failed over',
      source: 'github-actions',
      metadata,
      bucketSids: [acct.bucketSid],
      environmentSids: ['prod01'],
      startedAt: '2026-03-01T10:00:00.000Z',
      endedAt: null,
    });
    const sid = incident.body.sid;

    const got = await a.get<Ev>(`${base}/${sid}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(incident.body);

    const closed = await a.put<Ev>(`${base}/${sid}`, { endedAt: '2026-03-01T10:45:00.000Z' });
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({
      name: 'DB outage',
      description: 'primary failed over',
      metadata,
      bucketSids: [acct.bucketSid],
      startedAt: '2026-03-01T10:00:00.000Z',
      endedAt: '2026-03-01T10:45:00.000Z',
    });
    expect(closed.body.updatedAt).toMatch(ISO_MS);

    const renamed = await a.put<Ev>(`${base}/${sid}`, {
      name: 'DB outage (resolved)',
      metadata: { postmortem: 'https://wiki/pm/1' },
      description: null,
    });
    expect(renamed.body).toMatchObject({
      name: 'DB outage (resolved)',
      description: null,
      metadata: { postmortem: 'https://wiki/pm/1' },
      endedAt: '2026-03-01T10:45:00.000Z',
      type: 'incident',
    });
    const reopened = await a.put<Ev>(`${base}/${sid}`, { endedAt: null });
    expect(reopened.body.endedAt).toBeNull();

    const del = await a.delete(`${base}/${sid}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ sid, deleted: true });
    expect((await a.get(`${base}/${sid}`)).status).toBe(404);
    expect((await a.delete(`${base}/${sid}`)).status).toBe(404);
    expect((await a.put(`${base}/${sid}`, { name: 'x' })).status).toBe(404);
  });

  it('filters by type, time range, bucket and environment, newest first, with limit and page', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const b1 = acct.bucketSid;
    const b2 = await secondBucket(acct);
    const base = `/v1/accounts/${acct.accountSid}/events`;
    const make = async (body: Record<string, unknown>) => {
      const res = await a.post<Ev>(base, body);
      expect(res.status).toBe(201);
      return res.body.sid;
    };
    const A = await make({
      type: 'deployment',
      name: 'A',
      bucketSids: [b1],
      environmentSids: ['prod01'],
      startedAt: at(0),
    });
    const B = await make({ type: 'incident', name: 'B', startedAt: at(10), endedAt: at(60) });
    const C = await make({
      type: 'config_change',
      name: 'C',
      bucketSids: [b2],
      environmentSids: ['stag01'],
      startedAt: at(30),
    });
    const D = await make({ type: 'custom', name: 'D', environmentSids: ['prod01'], startedAt: at(120) });
    const sids = async (query: string) => {
      const res = await a.get<List>(`${base}?${query}`);
      expect(res.status).toBe(200);
      return res.body.records.map((r) => r.sid);
    };

    expect(await sids('')).toEqual([D, C, B, A]);
    expect(await sids('type=incident')).toEqual([B]);
    expect(await sids(`bucketSid=${b1}`)).toEqual([D, B, A]);
    expect(await sids(`bucketSid=${b2}`)).toEqual([D, C, B]);
    expect(await sids('environmentSid=prod01')).toEqual([D, B, A]);
    expect(await sids('environmentSid=stag01')).toEqual([C, B]);
    expect(await sids(`environmentSid=stag01&bucketSid=${b1}`)).toEqual([B]);
    // A duration event overlapping the range is in; point events outside it are out.
    expect(await sids(`startTime=${at(40)}&endTime=${at(50)}`)).toEqual([B]);
    // Bounds are inclusive: C starts exactly at endTime, A exactly at startTime.
    expect(await sids(`startTime=${at(0)}&endTime=${at(30)}`)).toEqual([C, B, A]);
    expect(await sids(`startTime=${at(61)}`)).toEqual([D]);
    expect(await sids(`endTime=${at(5)}`)).toEqual([A]);
    expect(await sids('order=asc')).toEqual([A, B, C, D]);

    const p1 = await a.get<List>(`${base}?limit=3`);
    expect(p1.body.hasMore).toBe(true);
    expect(p1.body.records.map((r) => r.sid)).toEqual([D, C, B]);
    const p2 = await a.get<List>(`${base}?limit=3&page=2`);
    expect(p2.body).toEqual({ hasMore: false, records: [expect.objectContaining({ sid: A })] });

    // The function the metrics charts use applies the same rules, oldest first.
    const inRange = await listEventsInRange(testPool(), acct.accountSid, {
      start: at(0),
      end: at(60),
      bucketSid: b1,
      environmentSid: 'prod01',
    });
    expect(inRange.map((e) => e.sid)).toEqual([A, B]);
  });

  it('defaults the list limit to 25', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/events`;
    for (let i = 0; i < 26; i++) {
      expect((await a.post(base, { type: 'scale', name: `s${i}`, startedAt: at(i) })).status).toBe(201);
    }
    const res = await a.get<List>(base);
    expect(res.body.records).toHaveLength(25);
    expect(res.body.hasMore).toBe(true);
    expect(res.body.records[0]!.name).toBe('s25');
  });

  it('refuses invalid bodies and queries with 400 naming each field', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/events`;

    const missing = await a.post(base, { description: 'no type, no name' });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(Object.keys(details(missing.body))).toEqual(expect.arrayContaining(['body.type', 'body.name']));

    const bad = await a.post(base, {
      type: 'party',
      name: 'x',
      environmentSids: ['production'],
      startedAt: 'yesterday',
      metadata: 'not an object',
      color: 'red',
    });
    expect(bad.status).toBe(400);
    expect(Object.keys(details(bad.body))).toEqual(
      expect.arrayContaining([
        'body.type',
        'body.environmentSids.0',
        'body.startedAt',
        'body.metadata',
        'body.color',
      ]),
    );

    const reversed = await a.post(base, { type: 'incident', name: 'x', startedAt: at(10), endedAt: at(5) });
    expect(reversed.status).toBe(400);
    expect(details(reversed.body)).toHaveProperty('body.endedAt');

    const foreignBucket = await a.post(base, {
      type: 'deployment',
      name: 'x',
      bucketSids: [other.bucketSid],
    });
    expect(foreignBucket.status).toBe(400);
    expect(details(foreignBucket.body)['body.bucketSids']).toContain(other.bucketSid);
    const noBuckets = await a.post(base, { type: 'deployment', name: 'x', bucketSids: [] });
    expect(noBuckets.status).toBe(400);

    const ev = await a.post<Ev>(base, { type: 'incident', name: 'open', startedAt: at(10) });
    const putBefore = await a.put(`${base}/${ev.body.sid}`, { endedAt: at(0) });
    expect(putBefore.status).toBe(400);
    expect(details(putBefore.body)).toHaveProperty('body.endedAt');
    const putBad = await a.put(`${base}/${ev.body.sid}`, { type: 'other', name: '' });
    expect(putBad.status).toBe(400);
    expect(Object.keys(details(putBad.body))).toEqual(expect.arrayContaining(['body.type', 'body.name']));
    const putForeign = await a.put(`${base}/${ev.body.sid}`, { bucketSids: ['*', 'bkt_nope'] });
    expect(putForeign.status).toBe(400);
    expect((await a.get<Ev>(`${base}/${ev.body.sid}`)).body).toMatchObject({ name: 'open', endedAt: null });

    for (const q of [
      'limit=101',
      'limit=0',
      'type=party',
      'startTime=not-a-date',
      `startTime=${at(10)}&endTime=${at(0)}`,
    ]) {
      const res = await a.get(`${base}?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body, q).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
    }
    expect((await a.get(`${base}?limit=100`)).status).toBe(200);
  });

  it('answers 401 without a valid token, 403 without the scope, 404 for another account', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}/events`;
    const ev = await api(acct.apiToken).post<Ev>(base, { type: 'custom', name: 'mine' });
    const one = `${base}/${ev.body.sid}`;

    for (const token of [undefined, 'at_live_doesnotexist0000000000000000000000000000', 'garbage']) {
      const c = api(token);
      for (const res of [
        await c.get(base),
        await c.post(base, { type: 'custom', name: 'x' }),
        await c.get(one),
        await c.put(one, { name: 'x' }),
        await c.delete(one),
      ]) {
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ success: false, error: { code: 'INVALID_TOKEN' } });
      }
    }
    // MCP tokens only work on /mcp.
    const mcp = await mcpToken(acct, 'prod01');
    expect((await api(mcp.token).get(base)).status).toBe(401);

    const readOnly = api(await scopedToken(acct, ['events:read']));
    expect((await readOnly.get(base)).status).toBe(200);
    expect((await readOnly.get(one)).status).toBe(200);
    for (const res of [
      await readOnly.post(base, { type: 'custom', name: 'x' }),
      await readOnly.put(one, { name: 'x' }),
      await readOnly.delete(one),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ success: false, error: { code: 'FORBIDDEN' } });
    }
    // (buckets:read and metrics:read would grant events:read: docs/auth.md "Scopes")
    const writeOnly = api(await scopedToken(acct, ['events:write', 'requests:read']));
    expect((await writeOnly.get(base)).status).toBe(403);
    expect((await writeOnly.get(one)).status).toBe(403);
    expect((await writeOnly.delete(one)).status).toBe(403);
    expect((await writeOnly.put(one, { name: 'renamed' })).status).toBe(200);

    const stranger = api(other.apiToken);
    expect((await stranger.get(one)).status).toBe(404);
    expect((await stranger.put(one, { name: 'x' })).status).toBe(404);
    expect((await stranger.delete(one)).status).toBe(404);
    expect((await stranger.get(base)).status).toBe(404);
    expect((await stranger.post(base, { type: 'custom', name: 'x' })).status).toBe(404);
    const theirs = `/v1/accounts/${other.accountSid}/events/${ev.body.sid}`;
    const res = await stranger.get(theirs);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });
    expect((await stranger.get<List>(`/v1/accounts/${other.accountSid}/events`)).body.records).toEqual([]);
    expect((await api(acct.apiToken).get(`${base}/evt_malformed`)).status).toBe(404);
    expect((await api(acct.apiToken).get(`${base}/${'x'.repeat(150)}`)).status).toBe(404);
    expect((await api(acct.apiToken).get<Ev>(one)).body.name).toBe('renamed');
  });
});
