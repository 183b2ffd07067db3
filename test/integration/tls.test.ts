import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { http, makeRecord, testEnv, testPool } from '../helpers/client.js';
import { freePort, startService, type ServiceProcess } from '../helpers/service-process.js';

const run = promisify(execFile);

/**
 * TLS_CERT / TLS_KEY: both listeners serve HTTPS, every answer carries Strict-Transport-Security,
 * and the session cookies are Secure. A second service (ingest and API roles) sharing the run's
 * Kafka and Postgres, with a certificate made for 127.0.0.1 by openssl in the test.
 */
let svc: ServiceProcess;
let ca: Buffer;

beforeAll(async () => {
  const env = testEnv();
  const dir = path.join(env.dataDir, `tls-${process.pid}`);
  fs.mkdirSync(dir, { recursive: true });
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  await run('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    '-keyout', key, '-out', cert,
  ]); // prettier-ignore
  ca = fs.readFileSync(cert);
  svc = await startService(
    {
      ROLES: 'ingest,api',
      INGEST_PROCESS: 'inline',
      PORT: String(await freePort()),
      INGEST_PORT: String(await freePort()),
      DATA_DIR: dir,
      KAFKA_BROKERS: env.kafkaBrokers.join(','),
      DATABASE_URL: env.databaseUrl,
      TLS_CERT: cert,
      TLS_KEY: key,
    },
    path.join(dir, 'service.log'),
  );
}, 180_000);

afterAll(async () => {
  await svc?.stop();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** One HTTPS call that trusts only the test's certificate. */
function call(method: string, url: string, body?: unknown, token?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(
      url,
      {
        method,
        ca,
        headers: {
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: JSON.parse(text || '{}') as Record<string, unknown>,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

describe('TLS listeners (TLS_CERT, TLS_KEY)', () => {
  it('serves the API over HTTPS with HSTS and Secure session cookies', async () => {
    expect(svc.apiUrl.startsWith('https://')).toBe(true);
    const ready = await call('GET', `${svc.apiUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.headers['strict-transport-security']).toBe('max-age=31536000');

    const tag = randomBytes(6).toString('hex');
    const email = `tls-${tag}@example.test`;
    await createAccount(testPool(), {
      name: `TLS ${tag}`,
      email,
      bucketName: `b-${tag}`,
      plan: 'enterprise',
      rateLimit: 1_000_000,
      password: 'correct horse battery',
    });
    const signin = await call('POST', `${svc.apiUrl}/v1/authentication/signin`, {
      email,
      password: 'correct horse battery',
    });
    expect(signin.status).toBe(200);
    expect(signin.headers['strict-transport-security']).toBe('max-age=31536000');
    const cookies = [signin.headers['set-cookie'] ?? []].flat();
    expect(cookies.map((c) => c.split('=')[0])).toEqual(
      expect.arrayContaining(['tapline_session', 'tapline_csrf']),
    );
    for (const c of cookies) expect(c, c).toMatch(/;\s*Secure(;|$)/i);

    // A refusal carries HSTS too: the header is set before any route runs.
    const refused = await call('GET', `${svc.apiUrl}/v1/accounts/acc_nope/buckets`);
    expect(refused.status).toBe(401);
    expect(refused.headers['strict-transport-security']).toBe('max-age=31536000');
  });

  it('takes records on the HTTPS ingest listener with HSTS', async () => {
    const tag = randomBytes(6).toString('hex');
    const acct = await createAccount(testPool(), {
      name: `TLS ingest ${tag}`,
      email: `tls-ingest-${tag}@example.test`,
      bucketName: `b-${tag}`,
      plan: 'enterprise',
      rateLimit: 1_000_000,
    });
    const res = await call(
      'POST',
      `${svc.ingestUrl}/v1/buckets/${acct.bucketSid!}/ingest`,
      { records: [makeRecord()] },
      acct.apiToken,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000');
  });

  it('sends no HSTS and no Secure flag over plain HTTP (the shared service)', async () => {
    const tag = randomBytes(6).toString('hex');
    const email = `plain-${tag}@example.test`;
    await createAccount(testPool(), {
      name: `Plain ${tag}`,
      email,
      bucketName: `b-${tag}`,
      plan: 'enterprise',
      rateLimit: 1_000_000,
      password: 'correct horse battery',
    });
    const res = await http('POST', `${testEnv().apiUrl}/v1/authentication/signin`, {
      body: { email, password: 'correct horse battery' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('strict-transport-security')).toBeNull();
    const cookies = res.headers.getSetCookie();
    expect(cookies.length).toBe(2);
    for (const c of cookies) expect(c).not.toMatch(/;\s*Secure/i);
    // Behind a TLS-terminating proxy that says so, the same answer is marked for HTTPS.
    const proxied = await http('POST', `${testEnv().apiUrl}/v1/authentication/signin`, {
      body: { email, password: 'correct horse battery' },
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(proxied.status).toBe(200);
    expect(proxied.headers.get('strict-transport-security')).toBe('max-age=31536000');
    for (const c of proxied.headers.getSetCookie()) expect(c).toMatch(/;\s*Secure/i);
  });
});
