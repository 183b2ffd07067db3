import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { RECOMMENDED_REDACTIONS } from '../../schemas/recommended-redactions.js';
import { api, ingest, listAllRequests, makeRecord, testPool, waitFor } from '../helpers/client.js';

/**
 * A new account starts with the recommended redactions (docs/sensitive-data.md "Secure by
 * default"): a record carrying a bearer token, a cookie, a password field, an API key, a JWT and a
 * card number is stored and served redacted without any configuration, and the rules are
 * ordinary, listed, removable rules.
 */
const BEARER = 'Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0';
const COOKIE = 'sid=c00k1e-s3ss10n-value-7766';
const PASSWORD = 'hunter2-but-longer!';
const STRIPE_KEY = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
const CARD = '4111 1111 1111 1111';

describe('secure by default: the recommended redactions of a new account', () => {
  it('stores and serves credentials, passwords and card numbers redacted with no rule added', async () => {
    const tag = randomBytes(6).toString('hex');
    const acct = await createAccount(testPool(), {
      name: `Defaults ${tag}`,
      email: `defaults-${tag}@example.test`,
      bucketName: `defaults-${tag}`,
      plan: 'enterprise',
      rateLimit: 1_000_000,
    });
    const bucketSid = acct.bucketSid!;

    const rules = await api(acct.apiToken).get<{
      records: { sid: string; type?: string; level?: string; redactAt: string; enabled?: boolean }[];
    }>(`/v1/accounts/${acct.accountSid}/redactions?limit=100`);
    expect(rules.status).toBe(200);
    expect(rules.body.records.map((r) => [r.type, r.level, r.redactAt, r.enabled]).sort()).toEqual(
      RECOMMENDED_REDACTIONS.map((r) => [r.type, r.level, 'server', true]).sort(),
    );
    // Listed (newest first) in the order of the recommended list, not in a tie's arbitrary order.
    expect(rules.body.records.map((r) => r.type)).toEqual(RECOMMENDED_REDACTIONS.map((r) => r.type));
    expect(RECOMMENDED_REDACTIONS.map((r) => r.type).sort()).toEqual([
      'api_key',
      'authorization',
      'card',
      'jwt',
      'password',
    ]);

    const path = `/defaults-${tag}`;
    const base = makeRecord();
    const res = await ingest(bucketSid, acct.apiToken, [
      {
        ...base,
        request: {
          ...(base.request as Record<string, unknown>),
          method: 'POST',
          path,
          url: `https://api.example.com${path}`,
          headers: { authorization: BEARER, cookie: COOKIE, 'content-type': 'application/json' },
          body: JSON.stringify({
            user: 'jane',
            password: PASSWORD,
            card: CARD,
            stripe: STRIPE_KEY,
            id_token: JWT,
          }),
        },
      },
    ]);
    expect(res.status).toBe(202);

    const stored = await waitFor(
      async () => (await listAllRequests(acct.apiToken, acct.accountSid, bucketSid, `q=path:${path}`))[0],
      { timeoutMs: 30_000, what: 'the record stored' },
    );
    const detail = await api(acct.apiToken).get(
      `/v1/accounts/${acct.accountSid}/buckets/${bucketSid}/requests/${stored.sid as string}`,
    );
    expect(detail.status).toBe(200);
    for (const answer of [JSON.stringify(stored), detail.text]) {
      for (const secret of [
        '9f8e7d6c5b4a39281706f5e4d3c2b1a0',
        'c00k1e-s3ss10n',
        PASSWORD,
        STRIPE_KEY,
        'dozjgNryP4J3jVmNHl0w5N',
        '4111 1111 1111 1111',
      ])
        expect(answer, secret).not.toContain(secret);
    }
    const body = JSON.parse((detail.body as { request: { body: string } }).request.body) as Record<
      string,
      string
    >;
    // The card keeps its last 4 digits (partial); the other values are gone in full.
    expect(body.card).toMatch(/1111$/);
    expect(body.card).not.toBe(CARD);
    expect(body.user).toBe('jane');
    expect((detail.body as { redacted?: boolean }).redacted).toBe(true);

    // An ordinary rule: deleted like any other, after which a new record is stored as sent.
    for (const r of rules.body.records) {
      const del = await api(acct.apiToken).delete(`/v1/accounts/${acct.accountSid}/redactions/${r.sid}`);
      expect(del.status).toBe(200);
    }
    const plainPath = `/plain-${tag}`;
    await waitFor(
      async () => {
        await ingest(bucketSid, acct.apiToken, [
          {
            ...base,
            request: {
              ...(base.request as Record<string, unknown>),
              path: plainPath,
              url: `https://api.example.com${plainPath}`,
              headers: { authorization: BEARER },
            },
          },
        ]);
        const rows = await listAllRequests(acct.apiToken, acct.accountSid, bucketSid, `q=path:${plainPath}`);
        return rows.some((r) => JSON.stringify(r).includes('9f8e7d6c5b4a39281706f5e4d3c2b1a0'));
      },
      { timeoutMs: 30_000, intervalMs: 1000, what: 'a record stored as sent once the rules are deleted' },
    );
  });
});
