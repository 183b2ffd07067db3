import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  api,
  ingest,
  listAllRequests,
  makeRecord,
  newAccount,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';
import { scopedToken } from '../helpers/scoped-token.js';

/**
 * POST …/consumerIdentification/preview (docs/consumers.md): draft sources applied to one stored
 * request with the processor's code and key, so the id it shows is the id the processor stores
 * for the same credential; nothing stored; bad sources refused with the field named.
 */

type Stored = Record<string, unknown> & {
  sid: string;
  contextSid: string | null;
  consumer?: { id: string; name?: string; group?: string } | null;
};
interface Preview {
  requestSid: string;
  consumer: { id: string; group?: string } | null;
  source: number | null;
  storedConsumer: { id: string; name?: string; group?: string } | null;
}

const tag = () => randomBytes(5).toString('hex');
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const jwt = (claims: Record<string, unknown>) => `${b64({ alg: 'HS256' })}.${b64(claims)}.not-verified`;
const identification = (a: TestAccount) =>
  `/v1/accounts/${a.accountSid}/buckets/${a.bucketSid}/consumerIdentification`;

async function stored(a: TestAccount, ctx: string, n: number): Promise<Stored[]> {
  return waitFor(
    async () => {
      const all = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as Stored[];
      const mine = all.filter((r) => (r.contextSid ?? '').startsWith(ctx));
      return mine.length >= n ? mine : undefined;
    },
    { timeoutMs: 40_000, what: `${n} stored records of ${ctx}` },
  );
}

describe('consumers: identification preview against a stored request', () => {
  it('gives the id and group the processor would, a credential only as its keyed hash; bad drafts are 400', async () => {
    const a = await newAccount();
    const rawKey = `sk_live_${tag()}${tag()}`;
    const ctx = `pv-${tag()}`;
    // Stored before any rule exists: no consumer of its own.
    await ingest(a.bucketSid, a.apiToken, [
      makeRecord({
        contextSid: `${ctx}-key`,
        request: {
          method: 'GET',
          path: '/orders',
          headers: {
            'X-API-Key': rawKey,
            authorization: `Bearer ${jwt({ client_id: 'app-7', org: 'org-3' })}`,
          },
          queryString: { app: 'mobile' },
        },
      }),
      makeRecord({ contextSid: `${ctx}-own`, consumer: { id: 'cus_own', name: 'Own Ltd' } }),
      // Stored with the key already masked: the preview says the value it read is redacted.
      makeRecord({
        contextSid: `${ctx}-masked`,
        request: { method: 'GET', path: '/m', headers: { 'X-API-Key': '[REDACTED:api_key]' } },
      }),
    ]);
    const rows = await stored(a, ctx, 3);
    const masked = rows.find((r) => r.contextSid === `${ctx}-masked`)!;
    const keyed = rows.find((r) => r.contextSid === `${ctx}-key`)!;
    const own = rows.find((r) => r.contextSid === `${ctx}-own`)!;
    expect(keyed.consumer ?? null).toBeNull();
    const preview = (sources: unknown[], requestSid = keyed.sid, token = a.apiToken) =>
      api(token).post<Preview>(`${identification(a)}/preview`, { sources, requestSid });

    // A header rule: the keyed hash, never the key.
    const byHeader = await preview([{ type: 'header', name: 'x-api-key' }]);
    expect(byHeader.status, byHeader.text).toBe(200);
    expect(byHeader.body.consumer?.id).toMatch(/^key_[0-9a-f]{16}$/);
    expect(byHeader.body).toMatchObject({
      requestSid: keyed.sid,
      source: 0,
      redacted: false,
      storedConsumer: null,
    });
    expect(byHeader.text).not.toContain(rawKey);

    // The JWT claim with its group, tried first; the query parameter when it is first.
    const byClaim = await preview([
      { type: 'jwtClaim', claim: 'client_id', groupClaim: 'org' },
      { type: 'header', name: 'X-API-Key' },
    ]);
    expect(byClaim.body).toMatchObject({ consumer: { id: 'app-7', group: 'org-3' }, source: 0 });
    const byQuery = await preview([
      { type: 'jwtClaim', claim: 'sub' },
      { type: 'query', name: 'app' },
    ]);
    expect(byQuery.body).toMatchObject({ consumer: { id: 'mobile' }, source: 1 });
    // The bearer token: always hashed, and another id than the API key's.
    const byBearer = await preview([{ type: 'bearer' }]);
    expect(byBearer.body.consumer?.id).toMatch(/^key_[0-9a-f]{16}$/);
    expect(byBearer.body.consumer?.id).not.toBe(byHeader.body.consumer?.id);
    const onMasked = await preview([{ type: 'header', name: 'x-api-key' }], masked.sid);
    expect(onMasked.body).toMatchObject({ source: 0, redacted: true });
    // No source finds anything: no consumer; the request's stored consumer is shown beside.
    const none = await preview([{ type: 'header', name: 'X-Other' }]);
    expect(none.body).toMatchObject({ consumer: null, source: null, storedConsumer: null });
    const ownPreview = await preview([{ type: 'header', name: 'X-Other' }], own.sid);
    expect(ownPreview.body.storedConsumer).toEqual({ id: 'cus_own', name: 'Own Ltd' });

    // The preview stores nothing: the bucket still has no sources.
    const rules = await api(a.apiToken).get<{ sources: unknown[] }>(identification(a));
    expect(rules.body.sources).toEqual([]);

    // The same rule saved: the processor stores the same id for the same key.
    const put = await api(a.apiToken).put(identification(a), {
      sources: [{ type: 'header', name: 'X-API-Key' }],
    });
    expect(put.status, put.text).toBe(200);
    const id = await waitFor(
      async () => {
        const c = `${ctx}-after-${tag()}`;
        await ingest(a.bucketSid, a.apiToken, [
          makeRecord({
            contextSid: c,
            request: { method: 'GET', path: '/x', headers: { 'x-api-key': rawKey } },
          }),
        ]);
        const [r] = await stored(a, c, 1);
        return r!.consumer?.id;
      },
      { timeoutMs: 60_000, what: 'the rule applied by the processor' },
    );
    expect(id).toBe(byHeader.body.consumer!.id);

    // Bad drafts: a 400 naming the field and what is wrong in the source's own type, as PUT gives.
    type Refusal = {
      success: boolean;
      error: { code: string; message: string; details: Record<string, string> };
    };
    const badName = await preview([{ type: 'header', name: 'X API Key' }]);
    expect(badName.status).toBe(400);
    expect(badName.body as unknown as Refusal).toMatchObject({
      success: false,
      error: {
        code: 'VALIDATION_ERROR',
        details: {
          'body.sources.0.name':
            "must be an HTTP header name (letters, digits and !#$%&'*+.^_`|~-, no spaces or colons)",
        },
      },
    });
    expect(Object.keys((badName.body as unknown as Refusal).error.details)).toEqual(['body.sources.0.name']);
    const badType = await preview([
      { type: 'jwtClaim', claim: 'sub' },
      { type: 'cookie', name: 'sid' },
    ]);
    expect(badType.status).toBe(400);
    expect((badType.body as unknown as Refusal).error.details).toEqual({
      'body.sources.1': 'has an unknown type "cookie"',
    });
    const putBad = await api(a.apiToken).put(identification(a), {
      sources: [{ type: 'jwtClaim', claim: '' }],
    });
    expect(putBad.status).toBe(400);
    expect((putBad.body as unknown as Refusal).error.details).toEqual({
      'body.sources.0.claim': 'must not be empty',
    });
    const noSid = await api(a.apiToken).post(`${identification(a)}/preview`, { sources: [] });
    expect(noSid.status).toBe(400);
    // An unknown request, another account's bucket: 404. A token without requests:read: 403.
    expect((await preview([{ type: 'bearer' }], 'req_unknown')).status).toBe(404);
    const b = await newAccount();
    // Another account's request, asked for through that account's own bucket: not found.
    const foreign = await api(b.apiToken).post(`${identification(b)}/preview`, {
      sources: [{ type: 'bearer' }],
      requestSid: keyed.sid,
    });
    expect(foreign.status).toBe(404);
    const bucketsOnly = await scopedToken(a, ['buckets:read']);
    expect((await preview([{ type: 'bearer' }], keyed.sid, bucketsOnly)).status).toBe(403);
  });
});
