import { randomBytes } from 'node:crypto';
import { AxeBuilder } from '@axe-core/playwright';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');

const MIN = 60_000;

/**
 * The consumer filter in the header (`?consumer=`) in real Chromium against the real stack: it
 * offers the consumers seen as one types, narrows the overview's tiles and charts, the endpoints,
 * errors and the stream (the `consumer:` term) and stays on every page; the overview's top
 * consumers; the consumer of a call in the stream's rows and on the request page.
 */
describe('dashboard: consumer filter, top consumers, consumer of a call', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `consumers-filter-${tag}@example.test`;
  const password = 'consumers filter password 1';
  let accountSid = '';
  let bucketSid = '';
  let apiToken = '';
  const now = Date.now();

  async function apiCall(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(env.apiUrl + path, {
      method,
      headers: {
        authorization: `Bearer ${apiToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    expect(res.status, text).toBeLessThan(300);
    return JSON.parse(text) as Record<string, unknown>;
  }

  async function ingest(bucket: string, records: unknown[]): Promise<void> {
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucket}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
  }

  const rec = (
    path: string,
    method: string,
    status: number,
    at: number,
    consumer?: { id: string; name?: string; group?: string },
  ) => ({
    createdAt: new Date(at).toISOString(),
    request: { method, path, host: 'shop.example.com', headers: {} },
    response: { statusCode: status },
    timings: { duration: status >= 500 ? 900 : 40 },
    ...(consumer ? { consumer } : {}),
  });

  /** The bucket's stored requests (the stream's own call), once `count` are there. */
  async function waitForRequests(bucket: string, count: number): Promise<void> {
    let seen = -1;
    for (let i = 0; i < 60 && seen !== count; i++) {
      if (i) await new Promise((r) => setTimeout(r, 1_000));
      const list = await apiCall(
        'GET',
        `/v1/accounts/${accountSid}/buckets/${bucket}/requests?limit=100&startDate=${new Date(now - 3_600_000).toISOString()}`,
      );
      seen = (list.records as unknown[]).length;
    }
    expect(seen).toBe(count);
  }

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, {
        name: `Consumers filter ${tag}`,
        email,
        password,
        plan: 'pro',
        bucketName: 'Shop API',
      });
      accountSid = acc.accountSid;
      bucketSid = acc.bucketSid!;
      apiToken = acc.apiToken;
    } finally {
      await pool.end();
    }
    const acme = { id: 'cus_acme', name: 'Acme Ltd', group: 'enterprise' };
    const beta = { id: 'cus_beta', group: 'startup' };
    const records = [];
    // Acme: 5 orders and one failed checkout (6 calls, 1 error); Beta: 3 orders; 1 call without.
    for (let i = 0; i < 5; i++) records.push(rec('/orders', 'GET', 200, now - (i + 1) * MIN, acme));
    records.push(rec('/checkout', 'POST', 503, now - 10 * MIN, acme));
    for (let i = 0; i < 3; i++) records.push(rec('/orders', 'GET', 200, now - (i + 2) * MIN, beta));
    records.push(rec('/health', 'GET', 200, now - 4 * MIN));
    await ingest(bucketSid, records);
    await waitForRequests(bucketSid, 10);
    // Aggregated too: the consumers list counts every call.
    let counts = '';
    for (let i = 0; i < 60 && counts !== 'cus_acme:6,cus_beta:3'; i++) {
      if (i) await new Promise((r) => setTimeout(r, 1_000));
      const list = await apiCall('GET', `/v1/accounts/${accountSid}/consumers?bucketSid=${bucketSid}`);
      counts = (list.records as { id: string; requestCount: number }[])
        .map((c) => `${c.id}:${c.requestCount}`)
        .join(',');
    }
    expect(counts).toBe('cus_acme:6,cus_beta:3');

    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl, { width: 1440, height: 900 });
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** axe-core finds no serious or critical violation on the page, light or dark. */
  async function expectNoSeriousAxeViolation(): Promise<void> {
    const found: string[] = [];
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      const result = await new AxeBuilder({ page }).analyze();
      for (const v of result.violations)
        if (v.impact === 'serious' || v.impact === 'critical')
          found.push(`${colorScheme}: ${v.id} at ${v.nodes.map((n) => n.target.join(' ')).join(' | ')}`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    expect(found).toEqual([]);
  }

  /** Full-page screenshots at 1440 and 390 px, light and dark. */
  async function screenshots(name: string): Promise<void> {
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      await screenshot(page, `${name}-1440-${colorScheme}`);
      await page.setViewportSize({ width: 390, height: 844 });
      await screenshot(page, `${name}-390-${colorScheme}`);
      await page.setViewportSize({ width: 1440, height: 900 });
    }
    await page.emulateMedia({ colorScheme: 'light' });
  }

  const tile = (label: string) => page.getByTestId(`tile-${label}`);
  const filter = () => page.getByRole('combobox', { name: 'Consumer', exact: true });

  it("shows the top consumers on the overview, each linking to the consumer's page", async () => {
    await page.goto(`/overview?bucket=${bucketSid}&range=24h`);
    await expect.poll(() => tile('Requests').textContent(), { timeout: 20_000 }).toBe('10');
    const top = page.getByTestId('top-consumer');
    await expect.poll(() => top.count(), { timeout: 15_000 }).toBe(2);
    const cells = async (i: number) =>
      (await top.nth(i).locator('td').allTextContents()).map((s) => s.replace(/\s+/g, ' ').trim());
    // consumer (name · group), requests, error rate, p95
    const acme = await cells(0);
    expect(acme.slice(0, 3)).toEqual(['Acme Ltd · enterprise', '6', '17%']);
    expect(acme[3]).toMatch(/ms$/);
    expect((await cells(1)).slice(0, 3)).toEqual(['cus_beta · startup', '3', '0%']);
    expect(await top.nth(0).getByRole('link').getAttribute('href')).toBe(
      `/consumers/detail?bucket=${bucketSid}&range=24h&id=cus_acme`,
    );
    await expectNoSeriousAxeViolation();
    await screenshots('overview-top-consumers');
  });

  it('offers the consumers seen as one types, and narrows the overview to the one picked', async () => {
    await filter().click();
    await filter().fill('enterp');
    // The suggestions come from the consumers list searched with the text (id, name or group).
    const options = page.locator('#consumer-filter-options option');
    await expect
      .poll(() => options.evaluateAll((o) => o.map((x) => x.getAttribute('value'))), { timeout: 15_000 })
      .toEqual(['cus_acme']);
    expect(await options.first().textContent()).toBe('Acme Ltd · enterprise');
    // Enter applies what is typed; the metrics calls carry consumer= (the range's own call, not
    // the previous period's, which ends where the range starts).
    const thr = page.waitForResponse((r) => {
      const params = new URL(r.url()).searchParams;
      return (
        r.url().includes('/metrics/shapeA/throughput') &&
        params.get('consumer') === 'cus_acme' &&
        Date.parse(params.get('endDate') ?? '') > Date.now() - 3_600_000
      );
    });
    await filter().fill('cus_acme');
    await filter().press('Enter');
    const body = (await (await thr).json()) as { summary: { total: { count: number } } };
    expect(body.summary.total.count).toBe(6);
    expect(new URL(page.url()).searchParams.get('consumer')).toBe('cus_acme');
    await expect.poll(() => tile('Requests').textContent()).toBe('6');
    expect(await tile('Error rate').textContent()).toBe('17%');
    // One consumer in view: no top-consumers table.
    expect(await page.getByTestId('top-consumers').count()).toBe(0);
    await screenshots('overview-consumer-filter');
  });

  it('keeps the filter on every page: endpoints and errors read the metrics for the consumer', async () => {
    const perf = page.waitForResponse(
      (r) =>
        r.url().includes('/metrics/performance') &&
        new URL(r.url()).searchParams.get('consumer') === 'cus_acme',
    );
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Endpoints' }).click();
    const endpoints = (await (await perf).json()) as { metrics: { group: string; requestCount: number }[] };
    expect(endpoints.metrics.map((m) => m.requestCount).sort()).toEqual([1, 5]);
    expect(new URL(page.url()).searchParams.get('consumer')).toBe('cus_acme');
    expect(await filter().inputValue()).toBe('cus_acme');
    const errors = page.waitForResponse(
      (r) =>
        r.url().includes('/metrics/errors') && new URL(r.url()).searchParams.get('consumer') === 'cus_acme',
    );
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Errors' }).click();
    expect((await errors).status()).toBe(200);
  });

  it("narrows the stream to the consumer's calls and shows each call's consumer", async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Stream' }).click();
    const rows = page.locator('.stream-table tbody tr');
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(6);
    // The consumer column: the name the calls carried, linking to the consumer's page.
    const consumers = await page.locator('.stream-consumer').allTextContents();
    expect(new Set(consumers)).toEqual(new Set(['Acme Ltd']));
    // The search field keeps the person's own search: the consumer is the filter's, not typed.
    expect(await page.getByLabel('Search requests').inputValue()).toBe('');
    await expectNoSeriousAxeViolation();
    await screenshots('stream-consumer-filter');
    // Cleared: every call again, with a dash for the one without a consumer.
    await page.getByRole('button', { name: 'Clear the consumer filter' }).click();
    await expect.poll(() => rows.count()).toBe(10);
    expect(new URL(page.url()).searchParams.has('consumer')).toBe(false);
    const all = await page.locator('.stream-consumer').allTextContents();
    expect(all.filter((c) => c === 'Acme Ltd')).toHaveLength(6);
    expect(all.filter((c) => c === 'cus_beta')).toHaveLength(3);
    expect(all.filter((c) => c === '–')).toHaveLength(1);
  });

  it("shows the call's consumer on the request page, linking to the consumer's page", async () => {
    const row = page.locator('.stream-table tbody tr').filter({ hasText: '/checkout' });
    await row.getByRole('link', { name: '/checkout' }).click();
    const fact = page.locator('.tile').filter({ has: page.locator('.tile-label', { hasText: 'Consumer' }) });
    await fact.waitFor();
    const link = fact.getByRole('link', { name: 'Acme Ltd' });
    expect(await link.getAttribute('href')).toContain('id=cus_acme');
    await expectNoSeriousAxeViolation();
    await screenshots('request-consumer');
    await link.click();
    await page.getByRole('heading', { name: /^Acme Ltd/, level: 1 }).waitFor();
    expect(new URL(page.url()).searchParams.get('bucket')).toBe(bucketSid);
    expect(me.errors).toEqual([]);
  });

  it('says how to identify consumers when a bucket with traffic has none', async () => {
    const quiet = await apiCall('POST', `/v1/accounts/${accountSid}/buckets`, { name: 'Quiet API' });
    const quietSid = String(quiet.sid);
    await ingest(quietSid, [rec('/ping', 'GET', 200, now - 2 * MIN)]);
    await waitForRequests(quietSid, 1);
    await page.goto(`/overview?bucket=${quietSid}&range=24h`);
    await expect.poll(() => tile('Requests').textContent(), { timeout: 20_000 }).toBe('1');
    const panel = page.getByTestId('top-consumers');
    await panel.getByText('No consumers identified in this range').waitFor();
    expect(await panel.getByRole('link', { name: "bucket's setup page" }).getAttribute('href')).toBe(
      `/settings/buckets/${quietSid}`,
    );
    await screenshot(page, 'overview-no-consumers-1440');
  });

  it("edits the bucket's identification sources: the API's message beside the field, saved, previewed", async () => {
    const keys = await apiCall('POST', `/v1/accounts/${accountSid}/buckets`, { name: 'Keys API' });
    const keysSid = String(keys.sid);
    const rawKey = `sk_live_${tag}${randomBytes(6).toString('hex')}`;
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = `${b64({ alg: 'HS256' })}.${b64({ client_id: 'app-7', org: 'org-3' })}.unsigned`;
    await ingest(keysSid, [
      {
        createdAt: new Date(now - MIN).toISOString(),
        request: {
          method: 'GET',
          path: '/keys',
          host: 'shop.example.com',
          headers: { 'X-API-Key': rawKey, authorization: `Bearer ${token}` },
          queryString: { app: 'mobile' },
        },
        response: { statusCode: 200 },
        timings: { duration: 12 },
      },
    ]);
    await waitForRequests(keysSid, 1);
    await page.goto(`/settings/buckets/${keysSid}`);
    const panel = page.locator('section', {
      has: page.getByRole('heading', { name: 'Consumer identification' }),
    });
    await panel.getByTestId('identification-none').waitFor();
    // A header name with spaces: the API refuses it, its message beside the field.
    await panel.getByRole('button', { name: 'Add a source' }).click();
    await panel.getByLabel('Header name').fill('X API Key');
    await panel.getByRole('button', { name: 'Save identification' }).click();
    const fieldError = panel.locator('.identification-source .field-error');
    await fieldError.waitFor();
    expect(await fieldError.textContent()).toContain('must be an HTTP header name');
    expect(await panel.getByLabel('Header name').getAttribute('aria-invalid')).toBe('true');
    let stored = await apiCall('GET', `/v1/accounts/${accountSid}/buckets/${keysSid}/consumerIdentification`);
    expect(stored.sources).toEqual([]);
    // Fixed, and a JWT claim with its group as the second source: saved.
    await panel.getByLabel('Header name').fill('X-API-Key');
    await panel.getByRole('button', { name: 'Add a source' }).click();
    await panel.getByLabel('Source 2', { exact: true }).selectOption('jwtClaim');
    await panel.getByLabel('Claim', { exact: true }).fill('client_id');
    await panel.getByLabel('Group claim (optional)').fill('org');
    await panel.getByRole('button', { name: 'Save identification' }).click();
    await panel.getByText('Saved. The processor applies').waitFor();
    expect(await fieldError.count()).toBe(0);
    stored = await apiCall('GET', `/v1/accounts/${accountSid}/buckets/${keysSid}/consumerIdentification`);
    expect(stored.sources).toEqual([
      { type: 'header', name: 'X-API-Key', hash: true },
      { type: 'jwtClaim', claim: 'client_id', groupClaim: 'org', header: 'Authorization' },
    ]);
    // The preview against the stored request: the key only as its keyed hash. The account's
    // recommended redactions masked the key when it was stored, and the preview says so.
    const result = panel.getByTestId('identification-preview');
    await panel.getByRole('button', { name: 'Preview the sources' }).click();
    await result.waitFor();
    expect(await result.locator('p').first().textContent()).toMatch(
      /^Consumer key_[0-9a-f]{16}, from source 1 \(request header X-API-Key\)\.$/,
    );
    expect(await result.getByTestId('identification-redacted').textContent()).toContain(
      'The value source 1 read is redacted in this stored request',
    );
    expect(await page.content()).not.toContain(rawKey);
    // A query parameter source added and moved first (not saved): the draft is what is previewed.
    await panel.getByRole('button', { name: 'Add a source' }).click();
    await panel.getByLabel('Source 3', { exact: true }).selectOption('query');
    await panel.getByLabel('Parameter name').fill('app');
    await panel.getByRole('button', { name: 'Move source 3 up' }).click();
    await panel.getByRole('button', { name: 'Move source 2 up' }).click();
    await panel.getByRole('button', { name: 'Preview the sources' }).click();
    await expect
      .poll(() => result.locator('p').first().textContent())
      .toBe('Consumer mobile, from source 1 (query parameter app).');
    expect(await result.getByTestId('identification-redacted').count()).toBe(0);
    await expectNoSeriousAxeViolation();
    await screenshots('bucket-identification');
    expect(me.errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
  });
});
