import { describe, expect, it } from 'vitest';
import { http, newAccount, testEnv } from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

type Settings = Record<string, boolean | number>;
type SdkDoc = { bucketSid: string; settings: Settings; exclusionRules: unknown[]; redactionRules: unknown[] };
type ErrorBody = { error: { code: string; details: Record<string, unknown> } };

const DEFAULTS = {
  enabled: true,
  captureRequestBody: true,
  captureResponseBody: true,
  maxBodyBytes: 65_536,
  sampleRate: 1,
  interceptOutbound: true,
  debug: false,
};

/**
 * Issue 14 point 5: the SDK bootstrap answers an ingest token (`requests:write` only) on both
 * listeners, and serves the bucket's stored SDK settings (not constants), which
 * `…/buckets/{b}/sdkSettings` reads and changes.
 */
describe('SDK settings per bucket and the /sdk bootstrap', () => {
  const sdkPath = (b: string) => `/v1/buckets/${b}/sdk?redactAt=client&clientId=test-sdk`;

  it('answers an ingest-only token on the API and on the ingest listener, with the defaults', async () => {
    const acct = await newAccount();
    const ingestOnly = await tokenWithScopes(acct, ['requests:write']);
    for (const base of [testEnv().apiUrl, testEnv().ingestUrl]) {
      const res = await http<SdkDoc>('GET', base + sdkPath(acct.bucketSid), { token: ingestOnly });
      expect([base, res.status, res.text]).toEqual([base, 200, res.text]);
      expect(res.body.bucketSid).toBe(acct.bucketSid);
      expect(res.body.settings).toEqual(DEFAULTS);
    }
    // A reader (buckets:read) too; neither scope is a 403 naming buckets:read; no token is a 401.
    const reader = await tokenWithScopes(acct, ['buckets:read']);
    const neither = await tokenWithScopes(acct, ['metrics:read', 'requests:read']);
    for (const base of [testEnv().apiUrl, testEnv().ingestUrl]) {
      expect((await http('GET', base + sdkPath(acct.bucketSid), { token: reader })).status).toBe(200);
      const refused = await http<ErrorBody>('GET', base + sdkPath(acct.bucketSid), { token: neither });
      expect(refused.status).toBe(403);
      expect(refused.body.error.details.requiredScope).toBe('buckets:read');
      expect(refused.body.error.details.anyOf).toEqual(['buckets:read', 'requests:write']);
      expect((await http('GET', base + sdkPath(acct.bucketSid))).status).toBe(401);
    }
  });

  it('stores changed settings per bucket and serves them on both listeners', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const settingsPath = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/sdkSettings`;
    const api = testEnv().apiUrl;

    const before = await http<{ settings: Settings; defaults: Settings; updatedAt: string | null }>(
      'GET',
      api + settingsPath,
      { token: acct.apiToken },
    );
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ settings: DEFAULTS, defaults: DEFAULTS, updatedAt: null });

    const put = await http<{ settings: Settings; updatedAt: string }>('PUT', api + settingsPath, {
      token: acct.apiToken,
      body: { sampleRate: 0.25, captureResponseBody: false, maxBodyBytes: 1024, debug: true },
    });
    expect(put.status, put.text).toBe(200);
    const expected = {
      ...DEFAULTS,
      sampleRate: 0.25,
      captureResponseBody: false,
      maxBodyBytes: 1024,
      debug: true,
    };
    expect(put.body.settings).toEqual(expected);
    expect(put.body.updatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    // A second partial update keeps what the first one set.
    const put2 = await http<{ settings: Settings }>('PUT', api + settingsPath, {
      token: acct.apiToken,
      body: { enabled: false },
    });
    expect(put2.body.settings).toEqual({ ...expected, enabled: false });

    const ingestOnly = await tokenWithScopes(acct, ['requests:write']);
    for (const base of [api, testEnv().ingestUrl]) {
      const sdk = await http<SdkDoc>('GET', base + sdkPath(acct.bucketSid), { token: ingestOnly });
      expect(sdk.body.settings).toEqual({ ...expected, enabled: false });
    }
    // Another bucket of the same account keeps the defaults.
    const second = await http<{ sid: string }>('POST', `${api}/v1/accounts/${acct.accountSid}/buckets`, {
      token: acct.apiToken,
      body: { name: 'second' },
    });
    const sdk2 = await http<SdkDoc>('GET', api + sdkPath(second.body.sid), { token: ingestOnly });
    expect(sdk2.body.settings).toEqual(DEFAULTS);

    // Validation as the schema says: out of range, unknown, wrong type, empty.
    for (const [body, field] of [
      [{ sampleRate: 2 }, 'body.sampleRate'],
      [{ maxBodyBytes: -1 }, 'body.maxBodyBytes'],
      [{ verbose: true }, 'body.verbose'],
      [{ debug: 'yes' }, 'body.debug'],
    ] as const) {
      const bad = await http<ErrorBody>('PUT', api + settingsPath, { token: acct.apiToken, body });
      expect([JSON.stringify(body), bad.status]).toEqual([JSON.stringify(body), 400]);
      expect(bad.body.error.code).toBe('VALIDATION_ERROR');
      expect(Object.keys(bad.body.error.details)).toContain(field);
    }
    expect((await http('PUT', api + settingsPath, { token: acct.apiToken, body: {} })).status).toBe(400);

    // Scopes: reading needs buckets:read, changing buckets:write; an ingest token may not change them.
    const w = await http<ErrorBody>('PUT', api + settingsPath, { token: ingestOnly, body: { debug: false } });
    expect([w.status, w.body.error.details.requiredScope]).toEqual([403, 'buckets:write']);
    const r = await http<ErrorBody>('GET', api + settingsPath, { token: ingestOnly });
    expect([r.status, r.body.error.details.requiredScope]).toEqual([403, 'buckets:read']);
    // Another account sees nothing and changes nothing, on every path.
    expect((await http('GET', api + settingsPath, { token: other.apiToken })).status).toBe(404);
    const foreign = `/v1/accounts/${other.accountSid}/buckets/${acct.bucketSid}/sdkSettings`;
    expect((await http('PUT', api + foreign, { token: other.apiToken, body: { debug: false } })).status).toBe(
      404,
    );
    for (const base of [api, testEnv().ingestUrl])
      expect((await http('GET', base + sdkPath(acct.bucketSid), { token: other.apiToken })).status).toBe(404);
    const after = await http<{ settings: Settings }>('GET', api + settingsPath, { token: acct.apiToken });
    expect(after.body.settings).toEqual({ ...expected, enabled: false });
  });
});
