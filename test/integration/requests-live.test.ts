import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, testEnv, waitFor } from '../helpers/client.js';

interface LiveEvent {
  id: string;
  event: string;
  data: string;
}

interface OpenApiDoc {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
}

/** The schema the published OpenAPI document gives one live-tail event. */
async function liveEventSchema(): Promise<object> {
  const doc = (await api().get<OpenApiDoc>('/v1/openapi.json')).body;
  const op = doc.paths['/v1/accounts/{accountSid}/buckets/{bucketSid}/requests/live']?.get;
  const schema = op?.responses['200']?.content?.['text/event-stream']?.schema;
  expect(schema, 'live tail documents its event').toBeDefined();
  return schema!;
}

/** Opens the live tail and collects its events until `close()` (a real HTTP stream). */
async function openLive(url: string, token: string, headers: Record<string, string> = {}) {
  const ac = new AbortController();
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, ...headers },
    signal: ac.signal,
  });
  const events: LiveEvent[] = [];
  const arrivals: number[] = [];
  const done = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const ev: LiveEvent = { id: '', event: 'message', data: '' };
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) ev.id = line.slice(4);
            else if (line.startsWith('event: ')) ev.event = line.slice(7);
            else if (line.startsWith('data: ')) ev.data += line.slice(6);
          }
          if (ev.data) {
            events.push(ev);
            arrivals.push(Date.now());
          }
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    res,
    events,
    arrivals,
    sids: () =>
      events.filter((e) => e.event === 'request').map((e) => (JSON.parse(e.data) as { sid: string }).sid),
    close: async () => {
      ac.abort();
      await done;
    },
  };
}

describe('live tail (server-sent events)', () => {
  it('streams newly stored requests, exactly once, filtered by q, resumable with Last-Event-ID', async () => {
    const acct = await newAccount();
    const url = `${testEnv().apiUrl}/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests/live`;
    // A request stored before the stream opens is not replayed.
    const before = await ingest(acct.bucketSid, acct.apiToken, [makeRecord()]);
    expect(before.status).toBe(202);
    await waitFor(
      async () =>
        (
          await api(acct.apiToken).get<{ records: unknown[] }>(
            `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests`,
          )
        ).body.records.length === 1,
      { what: 'first record stored' },
    );

    const all = await openLive(url, acct.apiToken);
    const errorsOnly = await openLive(`${url}?q=${encodeURIComponent('status:>=500')}`, acct.apiToken);
    expect(all.res.status).toBe(200);
    expect(all.res.headers.get('content-type')).toContain('text/event-stream');

    const sent = Date.now();
    const r = await ingest(acct.bucketSid, acct.apiToken, [
      makeRecord({ request: { method: 'GET', path: '/live/ok' } }),
      makeRecord({ request: { method: 'POST', path: '/live/boom' }, response: { statusCode: 503 } }),
    ]);
    expect(r.status).toBe(202);
    // Both arrive on the open streams (freshness itself is the bench's figure, not a timed test).
    await waitFor(() => all.sids().length >= 2, { what: 'two live events', timeoutMs: 10_000 });
    await waitFor(() => errorsOnly.sids().length >= 1, { what: 'filtered live event', timeoutMs: 10_000 });
    expect(all.arrivals[1]!).toBeGreaterThanOrEqual(sent);

    // Each event is what the OpenAPI document says one event is (schema checkers such as
    // Schemathesis validate every event of a stream against it).
    const validEvent = new Ajv({ strict: false }).compile(await liveEventSchema());
    for (const e of all.events) expect(validEvent(e), JSON.stringify(validEvent.errors)).toBe(true);

    const first = all.events.filter((e) => e.event === 'request');
    const paths = first.map((e) => (JSON.parse(e.data) as { request: { path: string } }).request.path).sort();
    expect(paths).toEqual(['/live/boom', '/live/ok']);
    // Items have the list endpoint's shape (already redacted rows read from storage).
    const item = JSON.parse(first[0]!.data) as Record<string, unknown>;
    expect(item).toMatchObject({ bucketSid: acct.bucketSid, accountSid: acct.accountSid });
    expect(typeof item.storedAt).toBe('string');
    expect(
      errorsOnly.events.map((e) => (JSON.parse(e.data) as { request: { path: string } }).request.path),
    ).toEqual(['/live/boom']);

    // Resume after the first event: only what came after it, nothing twice.
    const resumed = await openLive(url, acct.apiToken, { 'last-event-id': first[0]!.id });
    await ingest(acct.bucketSid, acct.apiToken, [
      makeRecord({ request: { method: 'GET', path: '/live/third' } }),
    ]);
    await waitFor(() => all.sids().length >= 3, { what: 'third live event', timeoutMs: 10_000 });
    await waitFor(() => resumed.sids().length >= 2, { what: 'resumed events', timeoutMs: 10_000 });
    expect(resumed.sids()).toEqual([first[1] ? JSON.parse(first[1].data).sid : '', all.sids()[2]]);
    expect(new Set(all.sids()).size).toBe(all.sids().length);
    expect(all.sids()).toHaveLength(3);
    await Promise.all([all.close(), errorsOnly.close(), resumed.close()]);
  });

  it('ends the stream when its credential is revoked, before sending anything stored after', async () => {
    const acct = await newAccount();
    const acc = `/v1/accounts/${acct.accountSid}`;
    const url = `${testEnv().apiUrl}${acc}/buckets/${acct.bucketSid}/requests/live`;
    const made = await api(acct.apiToken).post<{ sid: string; token: string }>(`${acc}/apiTokens`, {
      name: 'live reader',
      scopes: ['requests:read'],
    });
    expect(made.status).toBe(201);
    const live = await openLive(url, made.body.token);
    expect(live.res.status).toBe(200);
    await ingest(acct.bucketSid, acct.apiToken, [
      makeRecord({ request: { method: 'GET', path: '/live/before' } }),
    ]);
    await waitFor(() => live.sids().length === 1, { what: 'the event before revoking', timeoutMs: 10_000 });

    expect((await api(acct.apiToken).delete(`${acc}/apiTokens/${made.body.sid}`)).status).toBe(200);
    await waitFor(() => live.events.some((e) => e.event === 'error'), {
      what: 'the stream ended for the revoked token',
      timeoutMs: 10_000,
    });
    const end = live.events.find((e) => e.event === 'error')!;
    expect(JSON.parse(end.data)).toMatchObject({ code: 'INVALID_TOKEN' });
    // Stored after the revocation: it never reaches the revoked reader (the stream is closed).
    await ingest(acct.bucketSid, acct.apiToken, [
      makeRecord({ request: { method: 'GET', path: '/live/after' } }),
    ]);
    await waitFor(
      async () =>
        (await api(acct.apiToken).get<{ records: unknown[] }>(`${acc}/buckets/${acct.bucketSid}/requests`))
          .body.records.length === 2,
      { what: 'the second record stored' },
    );
    await new Promise((r) => setTimeout(r, 1_500));
    expect(live.sids()).toHaveLength(1);
    await live.close();
  });

  it('refuses bad criteria and other accounts before streaming', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests/live`;
    const bad = await api(acct.apiToken).get<{ error: { code: string; details: Record<string, string> } }>(
      `${base}?q=${encodeURIComponent('colour:red')}`,
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    expect(bad.body.error.details['querystring.q']).toBeTruthy();
    const foreign = await api(other.apiToken).get(base);
    expect(foreign.status).toBe(404);
    const badSince = await api(acct.apiToken).get(`${base}?since=yesterday`);
    expect(badSince.status).toBe(400);
  });
});
