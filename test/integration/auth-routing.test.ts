import { beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../fuzz/raw-http.js';
import { newAccount, testEnv, type TestAccount } from '../helpers/client.js';

/**
 * Issue 14 point 11: authentication is decided on the route the router matched, not on the raw
 * URL. The router decodes `%XX` before matching, so `/%761/…` (`%76` = `v`) and `/v%31/…`
 * (`%31` = `1`) reach the `/v1/…` handlers: they must be refused with 401 without a credential,
 * exactly as the plain path is, and answered normally with one. Never a 5xx.
 */

/** Encoded spellings of a `/v1/…` path that the router decodes to the same route. */
function variants(path: string): string[] {
  const rest = path.slice('/v1'.length);
  return [
    path,
    `/%761${rest}`,
    `/v%31${rest}`,
    `/%76%31${rest}`,
    `/%76%31${rest.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`)}`,
  ];
}

let acct: TestAccount;

beforeAll(async () => {
  acct = await newAccount();
});

function routes(): { method: string; path: string }[] {
  const a = acct.accountSid;
  const b = acct.bucketSid;
  return [
    { method: 'GET', path: '/v1/authentication/verify' },
    { method: 'GET', path: '/v1/authentication/me' },
    { method: 'GET', path: `/v1/accounts/${a}/buckets` },
    { method: 'GET', path: `/v1/accounts/${a}/buckets/${b}` },
    { method: 'GET', path: `/v1/accounts/${a}/apiTokens` },
    { method: 'GET', path: `/v1/accounts/${a}/buckets/${b}/requests` },
    { method: 'GET', path: `/v1/accounts/${a}/exclusions` },
    { method: 'GET', path: `/v1/buckets/${b}/sdk?redactAt=server&clientId=c1` },
  ];
}

describe('auth is decided on the matched route', () => {
  it('refuses every encoded spelling of a /v1 route without a credential with 401', async () => {
    const problems: string[] = [];
    for (const r of routes()) {
      for (const url of variants(r.path)) {
        const res = await rawRequest(testEnv().apiUrl, { method: r.method, url });
        if (res.status !== 401)
          problems.push(`${r.method} ${url} -> ${res.status} ${res.text.slice(0, 160)}`);
        else expect(JSON.parse(res.text)).toMatchObject({ success: false, error: { code: 'INVALID_TOKEN' } });
      }
    }
    expect(problems).toEqual([]);
  });

  it('refuses an encoded spelling with a bad token with 401', async () => {
    const res = await rawRequest(testEnv().apiUrl, {
      method: 'GET',
      url: '/%761/authentication/verify',
      headers: { authorization: 'Bearer tk_not_a_real_token' },
    });
    expect(res.status).toBe(401);
  });

  it('answers an encoded spelling with a valid token like the plain path', async () => {
    for (const r of routes()) {
      const plain = await rawRequest(testEnv().apiUrl, {
        method: r.method,
        url: r.path,
        headers: { authorization: `Bearer ${acct.apiToken}` },
      });
      expect(plain.status, `${r.method} ${r.path}`).toBe(200);
      for (const url of variants(r.path)) {
        const res = await rawRequest(testEnv().apiUrl, {
          method: r.method,
          url,
          headers: { authorization: `Bearer ${acct.apiToken}` },
        });
        expect(res.status, `${r.method} ${url}`).toBe(200);
      }
    }
  });

  it('keeps public routes public under an encoded spelling', async () => {
    const res = await rawRequest(testEnv().apiUrl, { method: 'GET', url: '/%761/openapi.json' });
    expect(res.status).toBe(200);
  });

  it('answers an unknown path under an encoded prefix with an envelope, never a 5xx', async () => {
    for (const url of ['/%761/no-such-thing', '/%76%31/accounts', '/v1%2Fauthentication/verify']) {
      const res = await rawRequest(testEnv().apiUrl, { method: 'GET', url });
      expect(res.status, url).toBeGreaterThanOrEqual(400);
      expect(res.status, url).toBeLessThan(500);
      expect(JSON.parse(res.text)).toMatchObject({ success: false });
    }
  });
});
