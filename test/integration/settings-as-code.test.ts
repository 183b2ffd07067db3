import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { api, newAccount, testEnv, type TestAccount } from '../helpers/client.js';
import { ROOT } from '../helpers/service-process.js';

/**
 * Settings as code (docs/settings-as-code.md): `npm run admin -- export` and `apply` as the
 * operator runs them (tsx services/admin.ts, a child process against the test stack's Postgres
 * and secrets key), checked through the API. Each command is a tsx process of its own, which
 * took 21 s just to print its usage on the shared 2-core test machine under load: the tests
 * allow for that.
 */

const tsx = path.join(ROOT, 'node_modules', '.bin', 'tsx');

function admin(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      tsx,
      ['services/admin.ts', ...args],
      { cwd: ROOT, env: { ...process.env, ...testEnv().serviceEnv, LOG_LEVEL: 'warn', ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function seed(acct: TestAccount, tag: string, hookSecret: string) {
  const a = api(acct.apiToken);
  const base = `/v1/accounts/${acct.accountSid}`;
  const shop = await a.post<{ sid: string }>(`${base}/buckets`, {
    name: `shop-${tag}`,
    verifySslCerts: false,
  });
  expect(shop.status, shop.text).toBe(201);
  const posts = [
    a.post(`${base}/exclusions`, {
      name: 'health checks',
      pathPattern: '/healthz',
      method: 'GET',
      buckets: [shop.body.sid],
    }),
    a.post(`${base}/exclusions`, { criteria: 'method:OPTIONS', environments: ['prod01'] }),
    a.post(`${base}/redactions`, { name: 'passwords', fieldPath: '$.password', redactionType: 'mask' }),
    a.post(`${base}/buckets/${shop.body.sid}/streamViews`, { name: 'slow', criteria: 'duration:>1000' }),
    a.post(`${base}/environments/prod01/buckets/${shop.body.sid}/workflows`, {
      name: 'errors to hook',
      trigger: { type: 'error', conditions: [{ statusCode: '5xx' }] },
      actions: [
        {
          type: 'webhook',
          config: { url: 'https://hooks.example.com/tapline', headers: { Authorization: hookSecret } },
        },
      ],
    }),
  ];
  for (const r of await Promise.all(posts)) expect(r.status, r.text).toBe(201);
  const identification = await a.put(`${base}/buckets/${shop.body.sid}/consumerIdentification`, {
    sources: [
      { type: 'header', name: 'X-API-Key' },
      { type: 'jwtClaim', claim: 'sub', groupClaim: 'org' },
    ],
  });
  expect(identification.status, identification.text).toBe(200);
  return shop.body.sid;
}

/** The file without what differs between accounts by construction. */
const comparable = (yaml: string) => {
  const d = parse(yaml) as Record<string, unknown>;
  delete d.account;
  return d;
};

describe('settings as code', () => {
  it('exports, applies to an empty account, re-exports the same file, and applies twice as no change', async () => {
    const src = await newAccount();
    const dst = await newAccount();
    const tag = randomBytes(3).toString('hex');
    const secret = `Bearer sk_${randomBytes(10).toString('hex')}`;
    await seed(src, tag, secret);
    // The destination starts empty: its default bucket goes.
    const del = await api(dst.apiToken).delete(`/v1/accounts/${dst.accountSid}/buckets/${dst.bucketSid}`);
    expect(del.status, del.text).toBe(200);

    const out = await admin(['export', '--account', src.accountSid]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).not.toContain(secret.slice(7));
    const doc = parse(out.stdout) as {
      account: string;
      buckets: {
        name: string;
        workflows: { actions: { config: { headers: Record<string, string> } }[] }[];
      }[];
    };
    expect(doc.account).toBe(src.accountSid);
    const header = doc.buckets.find((b) => b.name === `shop-${tag}`)!.workflows[0]!.actions[0]!.config.headers
      .Authorization!;
    const envName = /^\$\{([A-Z0-9_]+)\}$/.exec(header)![1]!;
    expect(out.stderr).toContain(envName);
    expect(out.stdout).toMatch(
      /- name: health checks\n\s+pathPattern: \/healthz\n\s+method: GET\n\s+buckets:\n\s+- shop-\w+\n\s+isActive: true/,
    );
    // The bucket's identification sources, in order, every default written out.
    expect(
      (doc.buckets.find((b) => b.name === `shop-${tag}`) as { consumerIdentification?: unknown })
        .consumerIdentification,
    ).toEqual([
      { type: 'header', name: 'X-API-Key', hash: true },
      { type: 'jwtClaim', header: 'Authorization', claim: 'sub', groupClaim: 'org' },
    ]);

    const dir = await mkdtemp(path.join(os.tmpdir(), 'tapline-settings-'));
    const file = path.join(dir, 'tapline.yaml');
    await writeFile(file, out.stdout);

    // Without the secret in the environment nothing is applied.
    const noEnv = await admin(['apply', file, '--account', dst.accountSid]);
    expect(noEnv.code).toBe(1);
    expect(noEnv.stderr).toContain(`not set in the environment: ${envName}`);

    const env = { [envName]: secret };
    const dry = await admin(['apply', file, '--account', dst.accountSid, '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);
    const planned = dry.stdout.trim().split('\n');
    expect(planned).toContain(`create bucket "shop-${tag}"`);
    expect(planned).toContain(`create workflow "shop-${tag}/prod01/errors to hook"`);
    expect(planned).toContain('create exclusion "health checks"');
    expect(planned).toContain('create exclusion "method:OPTIONS"');
    expect(planned).toContain('create redaction "passwords"');
    expect(planned).toContain(`create streamView "shop-${tag}/slow"`);
    expect(planned).toContain(`create consumerIdentification "shop-${tag}"`);
    expect(planned.every((l) => l.startsWith('create '))).toBe(true);
    const stillEmpty = await api(dst.apiToken).get<{ records: unknown[] }>(
      `/v1/accounts/${dst.accountSid}/buckets`,
    );
    expect(stillEmpty.body.records).toEqual([]);

    const applied = await admin(['apply', file, '--account', dst.accountSid], env);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain(`Applied ${planned.length} change(s) to ${dst.accountSid}.`);

    const again = await admin(['export', '--account', dst.accountSid]);
    expect(again.code, again.stderr).toBe(0);
    expect(comparable(again.stdout)).toEqual(comparable(out.stdout));

    const second = await admin(['apply', file, '--account', dst.accountSid], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe('No changes.\n');

    // The secret reached the destination sealed and works: the stored header is the real one.
    const wfs = await api(dst.apiToken).get<{
      records: { actions: { config: { headers: Record<string, string> } }[] }[];
    }>(`/v1/accounts/${dst.accountSid}/workflows`);
    expect(wfs.body.records[0]!.actions[0]!.config.headers.Authorization).toBe('****');
  }, 600_000);

  it('applies only the difference of a changed file, and refuses a bad file with the API messages', async () => {
    const acct = await newAccount();
    const tag = randomBytes(3).toString('hex');
    const shopSid = await seed(acct, tag, 'Bearer one');
    const out = await admin(['export', '--account', acct.accountSid]);
    expect(out.code, out.stderr).toBe(0);
    const doc = parse(out.stdout) as {
      buckets: {
        name: string;
        consumerIdentification?: Record<string, unknown>[];
        streamViews: { name: string; criteria: string }[];
        workflows: unknown[];
      }[];
      exclusions: { name?: string }[];
    };
    const shop = doc.buckets.find((b) => b.name === `shop-${tag}`)!;
    shop.streamViews[0]!.criteria = 'duration:>2000';
    // The sources reordered, one default left out: a change of order, not of the default.
    shop.consumerIdentification = [
      { type: 'jwtClaim', claim: 'sub', groupClaim: 'org' },
      { type: 'header', name: 'X-API-Key', hash: true },
    ];
    doc.exclusions = doc.exclusions.filter((e) => e.name !== 'health checks');
    doc.buckets.push({ name: `new-${tag}`, streamViews: [], workflows: [] } as never);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tapline-settings-'));
    const file = path.join(dir, 'changed.yaml');
    await writeFile(file, stringify(doc));
    const envName = /\$\{([A-Z0-9_]+)\}/.exec(out.stdout)![1]!;
    const env = { [envName]: 'Bearer one' };

    const wfBefore = await api(acct.apiToken).get<{ records: { updatedAt: string | null }[] }>(
      `/v1/accounts/${acct.accountSid}/workflows`,
    );
    const applied = await admin(['apply', file], env);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout.trim().split('\n')).toEqual([
      `create bucket "new-${tag}"`,
      `update consumerIdentification "shop-${tag}"`,
      `update streamView "shop-${tag}/slow"`,
      'delete exclusion "health checks"',
      `Applied 4 change(s) to ${acct.accountSid}.`,
    ]);
    const sources = await api(acct.apiToken).get<{ sources: unknown[] }>(
      `/v1/accounts/${acct.accountSid}/buckets/${shopSid}/consumerIdentification`,
    );
    expect(sources.body.sources).toEqual([
      { type: 'jwtClaim', header: 'Authorization', claim: 'sub', groupClaim: 'org' },
      { type: 'header', name: 'X-API-Key', hash: true },
    ]);
    const views = await api(acct.apiToken).get<{ records: { criteria: string }[] }>(
      `/v1/accounts/${acct.accountSid}/buckets/${shopSid}/streamViews`,
    );
    expect(views.body.records.map((v) => v.criteria)).toEqual(['duration:>2000']);
    const exclusions = await api(acct.apiToken).get<{ records: { name?: string }[] }>(
      `/v1/accounts/${acct.accountSid}/exclusions`,
    );
    expect(exclusions.body.records.map((e) => e.name ?? null)).toEqual([null]);
    const wfAfter = await api(acct.apiToken).get<{ records: { updatedAt: string | null }[] }>(
      `/v1/accounts/${acct.accountSid}/workflows`,
    );
    expect(wfAfter.body.records[0]!.updatedAt).toBe(wfBefore.body.records[0]!.updatedAt);

    // A bad workflow: the apply stops with the message the API gives for the same body.
    const badWorkflow = {
      name: 'bad threshold',
      trigger: {
        type: 'threshold',
        conditions: [{ metric: 'error_rate', operator: 'greater_than', value: 5, timeWindow: '5 minutes' }],
      },
      actions: [{ type: 'email', config: { to: ['oncall@example.com'] } }],
    };
    const direct = await api(acct.apiToken).post<{
      error: { message: string; details: Record<string, string> };
    }>(`/v1/accounts/${acct.accountSid}/environments/prod01/buckets/${shopSid}/workflows`, badWorkflow);
    expect(direct.status).toBe(400);
    (shop.workflows as unknown[]).push({ environment: 'prod01', ...badWorkflow });
    await writeFile(file, stringify(doc));
    const refused = await admin(['apply', file], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `workflow "shop-${tag}/prod01/bad threshold": 400 VALIDATION_ERROR: ${direct.body.error.message}`,
    );
    for (const [field, message] of Object.entries(direct.body.error.details))
      expect(refused.stderr).toContain(`${field}: ${message}`);

    // A bad identification source: refused with the API's message, before any other change.
    (shop.workflows as unknown[]).pop();
    shop.consumerIdentification = [{ type: 'header', name: 'X API Key' }];
    await writeFile(file, stringify(doc));
    const badSource = await admin(['apply', file], env);
    expect(badSource.code).toBe(1);
    expect(badSource.stderr).toContain(
      `consumer identification of bucket "shop-${tag}": 400 VALIDATION_ERROR: sources.0.name must be an HTTP header name`,
    );
    expect(
      (
        await api(acct.apiToken).get<{ sources: unknown[] }>(
          `/v1/accounts/${acct.accountSid}/buckets/${shopSid}/consumerIdentification`,
        )
      ).body.sources,
    ).toHaveLength(2);
  }, 600_000);

  it('exports and applies SLOs, with the slo_burn workflow naming its SLO by name', async () => {
    const src = await newAccount();
    const dst = await newAccount();
    const tag = randomBytes(3).toString('hex');
    const base = `/v1/accounts/${src.accountSid}`;
    const shop = await api(src.apiToken).post<{ sid: string }>(`${base}/buckets`, { name: `slo-${tag}` });
    expect(shop.status, shop.text).toBe(201);
    const slo = await api(src.apiToken).post<{ sid: string }>(`${base}/slos`, {
      name: `checkout ${tag}`,
      bucketSid: shop.body.sid,
      endpoint: '/checkout',
      method: 'POST',
      sli: { kind: 'latency', thresholdMs: 300 },
      objective: 99.5,
      windowDays: 28,
    });
    expect(slo.status, slo.text).toBe(201);
    const wf = await api(src.apiToken).post(
      `${base}/environments/prod01/buckets/${shop.body.sid}/workflows`,
      {
        name: 'checkout burn',
        trigger: { type: 'slo_burn', sloSid: slo.body.sid },
        actions: [{ type: 'email', config: { to: ['oncall@example.com'] } }],
      },
    );
    expect(wf.status, wf.text).toBe(201);
    const del = await api(dst.apiToken).delete(`/v1/accounts/${dst.accountSid}/buckets/${dst.bucketSid}`);
    expect(del.status, del.text).toBe(200);

    const out = await admin(['export', '--account', src.accountSid]);
    expect(out.code, out.stderr).toBe(0);
    const doc = parse(out.stdout) as {
      buckets: {
        name: string;
        slos: Record<string, unknown>[];
        workflows: { trigger: Record<string, unknown> }[];
      }[];
    };
    const bucket = doc.buckets.find((b) => b.name === `slo-${tag}`)!;
    expect(bucket.slos).toEqual([
      {
        name: `checkout ${tag}`,
        endpoint: '/checkout',
        method: 'POST',
        sli: { kind: 'latency', thresholdMs: 300 },
        objective: 99.5,
        windowDays: 28,
      },
    ]);
    expect(bucket.workflows[0]!.trigger).toEqual({
      type: 'slo_burn',
      sloSid: `checkout ${tag}`,
      conditions: [],
    });

    const dir = await mkdtemp(path.join(os.tmpdir(), 'tapline-settings-'));
    const file = path.join(dir, 'slos.yaml');
    await writeFile(file, out.stdout);
    const applied = await admin(['apply', file, '--account', dst.accountSid]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain(`create slo "slo-${tag}/checkout ${tag}"`);
    const made = await api(dst.apiToken).get<{ records: { sid: string; name: string; objective: number }[] }>(
      `/v1/accounts/${dst.accountSid}/slos`,
    );
    expect(made.body.records.map((o) => [o.name, o.objective])).toEqual([[`checkout ${tag}`, 99.5]]);
    // The destination's workflow names the destination's SLO.
    const wfs = await api(dst.apiToken).get<{ records: { trigger: { sloSid?: string } }[] }>(
      `/v1/accounts/${dst.accountSid}/workflows`,
    );
    expect(wfs.body.records.map((w) => w.trigger.sloSid)).toEqual([made.body.records[0]!.sid]);
    const again = await admin(['export', '--account', dst.accountSid]);
    expect(comparable(again.stdout)).toEqual(comparable(out.stdout));

    // A changed objective is an update; an SLO left out of the file (with its workflow) goes.
    bucket.slos[0]!.objective = 99.9;
    await writeFile(file, stringify(doc));
    const changed = await admin(['apply', file, '--account', dst.accountSid]);
    expect(changed.code, changed.stderr).toBe(0);
    expect(changed.stdout.trim().split('\n')).toEqual([
      `update slo "slo-${tag}/checkout ${tag}"`,
      `Applied 1 change(s) to ${dst.accountSid}.`,
    ]);
    bucket.slos = [];
    bucket.workflows = [];
    await writeFile(file, stringify(doc));
    const removed = await admin(['apply', file, '--account', dst.accountSid]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout.trim().split('\n')).toEqual([
      `delete workflow "slo-${tag}/prod01/checkout burn"`,
      `delete slo "slo-${tag}/checkout ${tag}"`,
      `Applied 2 change(s) to ${dst.accountSid}.`,
    ]);
    const gone = await api(dst.apiToken).get<{ records: unknown[] }>(`/v1/accounts/${dst.accountSid}/slos`);
    expect(gone.body.records).toEqual([]);
  }, 600_000);
});
