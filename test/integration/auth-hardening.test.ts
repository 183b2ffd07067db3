import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { OutboundGuard, OutboundRefusedError } from '../../services/actions/outbound-guard.js';
import { rawRequest } from '../fuzz/raw-http.js';
import { newAccount, testEnv } from '../helpers/client.js';

/**
 * Auth and secure-default hardening (docs/security.md "Token inheritance", "What counts toward the
 * quota", "Secure defaults"): each case is one finding of an attack run on a fresh install.
 */

describe('hardening round three (auth and secure defaults)', () => {
  it('"Send a test" errors say a named target is not allowed, never what it resolves to', async () => {
    const resolver = async (host: string) => {
      if (host === 'vm') return [{ address: '127.0.0.1', family: 4 }];
      if (host === 'db.internal') return [{ address: '10.1.2.3', family: 4 }];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    const guard = new OutboundGuard([], resolver);
    for (const [url, address] of [
      ['http://vm:8080/hook', '127.0.0.1'],
      ['https://db.internal/', '10.1.2.3'],
    ] as const) {
      const err = await guard.check(url).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, url).toBeInstanceOf(OutboundRefusedError);
      const message = (err as Error).message;
      expect(message).toMatch(/the target is not allowed/);
      expect(message).not.toContain(address);
      expect(message).not.toMatch(/loopback|private/);
    }
  });

  it('sends Cache-Control: no-store on every /v1 answer, whatever the spelling of the path', async () => {
    const acct = await newAccount();
    const auth = { authorization: `Bearer ${acct.apiToken}`, 'content-type': 'application/json' };
    for (const prefix of ['/v1', '/%761', '/%76%31']) {
      const made = await rawRequest(testEnv().apiUrl, {
        method: 'POST',
        url: `${prefix}/accounts/${acct.accountSid}/apiTokens`,
        headers: auth,
        body: JSON.stringify({ name: `via ${prefix}`, scopes: ['buckets:read'] }),
      });
      expect(made.status, `${prefix}: ${made.text}`).toBe(201);
      expect(JSON.parse(made.text)).toHaveProperty('token');
      expect(made.headers['cache-control'], prefix).toBe('no-store');
      for (const [method, path] of [
        ['GET', `${prefix}/authentication/session`],
        ['GET', `${prefix}/accounts/${acct.accountSid}/nothing-here`],
        ['PATCH', `${prefix}/accounts/${acct.accountSid}/apiTokens`],
      ] as const) {
        const res = await rawRequest(testEnv().apiUrl, { method, url: path, headers: auth });
        expect(res.headers['cache-control'], `${method} ${path} (${res.status})`).toBe('no-store');
      }
    }
  });
});

describe('live-stream limit', () => {
  it('counts live streams atomically: 100 opened at once, never more than 20 accepted', async () => {
    const acct = await newAccount();
    const url = new URL(
      `${testEnv().apiUrl}/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests/live`,
    );
    const opened: http.ClientRequest[] = [];
    const open = () =>
      new Promise<number>((resolve, reject) => {
        const req = http.get(
          url,
          { agent: false, headers: { authorization: `Bearer ${acct.apiToken}` } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        opened.push(req);
      });
    try {
      const burst = await Promise.all(Array.from({ length: 100 }, open));
      // Refused with 429 past the limit, or 503 when a backing store is too busy for the burst.
      expect(burst.filter((s) => s !== 200 && s !== 429 && s !== 503)).toEqual([]);
      const accepted = burst.filter((s) => s === 200).length;
      expect(accepted).toBeLessThanOrEqual(20);
      // With the burst's streams still open, one at a time fill the account up to exactly 20.
      let more = 0;
      for (let i = 0; i < 25; i++) {
        const status = await open();
        if (status === 429) break;
        expect(status).toBe(200);
        more++;
      }
      expect(accepted + more).toBe(20);
    } finally {
      for (const req of opened) req.destroy();
    }
  });
});
