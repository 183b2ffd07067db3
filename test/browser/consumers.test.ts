import { randomBytes } from 'node:crypto';
import { AxeBuilder } from '@axe-core/playwright';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');

const MIN = 60_000;
const DAY = 86_400_000;

/**
 * The Consumers pages in real Chromium against the real stack: the list (rows, the "new" mark,
 * sparklines, sorting, search), one consumer's page (charts, endpoints used, recent errors linking
 * to the stream filtered to it) and renaming it, with the API's refusal shown in the form.
 */
describe('dashboard: consumers', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `consumers-${tag}@example.test`;
  const password = 'consumers password 1';
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

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, {
        name: `Consumers ${tag}`,
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
    const old = { id: 'cus_old' };
    const records = [];
    // Acme: 5 orders and one failed checkout in the last hour (6 calls, 1 error); first seen now.
    for (let i = 0; i < 5; i++) records.push(rec('/orders', 'GET', 200, now - (i + 1) * MIN, acme));
    records.push(rec('/checkout', 'POST', 503, now - 10 * MIN, acme));
    // Beta: 3 calls, first seen now. Old: 2 calls now and one 3 days ago (not new in 24 hours).
    for (let i = 0; i < 3; i++) records.push(rec('/orders', 'GET', 200, now - (i + 2) * MIN, beta));
    for (let i = 0; i < 2; i++) records.push(rec('/products', 'GET', 200, now - (i + 3) * MIN, old));
    records.push(rec('/products', 'GET', 200, now - 3 * DAY, old));
    // A call without a consumer: counted in the metrics, in no consumer's row.
    records.push(rec('/health', 'GET', 200, now - 4 * MIN));
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    // Stored and aggregated: the consumers list counts every call of the last 24 hours.
    let counts = '';
    for (let i = 0; i < 60 && counts !== 'cus_acme:6,cus_beta:3,cus_old:2'; i++) {
      if (i) await new Promise((r) => setTimeout(r, 1_000));
      const list = await apiCall('GET', `/v1/accounts/${accountSid}/consumers?bucketSid=${bucketSid}`);
      counts = (list.records as { id: string; requestCount: number }[])
        .map((c) => `${c.id}:${c.requestCount}`)
        .join(',');
    }
    expect(counts).toBe('cus_acme:6,cus_beta:3,cus_old:2');

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

  const rows = () => page.getByTestId('consumer-row');
  const firstCells = async () =>
    (await rows().locator('td:first-child a').allTextContents()).map((s) => s.trim());

  it('lists the consumers with requests, sparkline, error rate, p95 and the "new" mark', async () => {
    await page.goto(`/consumers?bucket=${bucketSid}&range=24h`);
    await page.getByRole('heading', { name: 'Consumers', level: 1 }).waitFor();
    await expect.poll(firstCells, { timeout: 20_000 }).toEqual(['Acme Ltd', 'cus_beta', 'cus_old']);
    const acme = rows().nth(0);
    const cells = (await acme.locator('td').allTextContents()).map((s) => s.trim());
    // name (with its id and the "new" mark), group, requests, sparkline, error rate, p95, last seen
    expect(cells[0]).toBe('Acme Ltdcus_acmenew');
    expect(cells[1]).toBe('enterprise');
    expect(cells[2]).toBe('6');
    expect(cells[4]).toBe('17%');
    expect(cells[5]).toMatch(/ms$/);
    expect(cells[6]).not.toBe('–');
    // The sparkline counts the consumer's calls of the range.
    await expect
      .poll(() => acme.locator('svg.sparkline').getAttribute('aria-label'), { timeout: 10_000 })
      .toMatch(/^Acme Ltd requests per \w+: 6 requests/);
    // New in the range: Acme and Beta; Old was first seen 3 days ago.
    expect(await rows().nth(1).locator('.consumer-new').count()).toBe(1);
    expect(await rows().nth(2).locator('.consumer-new').count()).toBe(0);
    // Beta has no name: its id is the label.
    expect((await rows().nth(1).locator('td').nth(1).textContent())?.trim()).toBe('startup');
    // Every page of the traffic group lists Consumers after Endpoints.
    const nav = await page.getByRole('navigation').getByRole('link').allTextContents();
    expect(nav.indexOf('Consumers')).toBe(nav.indexOf('Endpoints') + 1);
    await expectNoSeriousAxeViolation();
    await screenshot(page, 'consumers-list-1440');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'consumers-list-390');
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('sorts by the API: requests ascending, then by name', async () => {
    await page.getByRole('button', { name: /^Requests/ }).click();
    await expect.poll(firstCells).toEqual(['cus_old', 'cus_beta', 'Acme Ltd']);
    expect(page.url()).toContain('sort=requests');
    expect(page.url()).toContain('order=asc');
    expect(await page.locator('th[aria-sort="ascending"]').textContent()).toContain('Requests');
    // Name, descending first (the name, else the id): cus_old, cus_beta, Acme Ltd.
    await page.getByRole('button', { name: /^Consumer/ }).click();
    await expect.poll(firstCells).toEqual(['cus_old', 'cus_beta', 'Acme Ltd']);
    await page.getByRole('button', { name: /^Consumer/ }).click();
    await expect.poll(firstCells).toEqual(['Acme Ltd', 'cus_beta', 'cus_old']);
    expect(page.url()).toContain('sort=name');
  });

  it('searches the id, name and group (q)', async () => {
    await page.getByLabel('Search').fill('ENTERP');
    await expect.poll(firstCells).toEqual(['Acme Ltd']);
    expect(page.url()).toContain('q=ENTERP');
    await page.getByLabel('Search').fill('cus_');
    await expect.poll(firstCells).toEqual(['Acme Ltd', 'cus_beta', 'cus_old']);
    await page.getByLabel('Search').fill('nobody');
    await page.getByText('No consumer matches the search').waitFor();
    await page.getByLabel('Search').fill('');
    await expect.poll(firstCells).toEqual(['Acme Ltd', 'cus_beta', 'cus_old']);
  });

  it('opens a consumer: charts filtered to it, endpoints used, recent errors linking to the stream', async () => {
    // The charts read the metrics filtered to the consumer: its 6 calls, not the bucket's 12.
    const filtered = page.waitForResponse(
      (r) =>
        r.url().includes('/metrics/shapeA/throughput') &&
        new URL(r.url()).searchParams.get('consumer') === 'cus_acme',
    );
    await page.getByRole('link', { name: 'Acme Ltd' }).click();
    const thr = (await (await filtered).json()) as { summary: { total: { count: number } } };
    expect(thr.summary.total.count).toBe(6);
    await page.getByRole('heading', { name: /^Acme Ltd/, level: 1 }).waitFor();
    expect(new URL(page.url()).searchParams.get('id')).toBe('cus_acme');
    for (const c of ['Throughput', 'Response time', 'Error rate'])
      await page.getByTestId(`chart-${c}`).locator('.u-over').waitFor();
    const tiles = page.locator('.tile');
    await expect.poll(() => tiles.nth(0).locator('.tile-value').textContent()).toBe('6');
    expect(await tiles.nth(1).locator('.tile-value').textContent()).toBe('17%');
    const endpoints = page.getByTestId('consumer-endpoints').locator('tbody tr');
    await expect.poll(() => endpoints.count()).toBe(2);
    const ep = (await endpoints.allTextContents()).map((s) => s.replace(/\s+/g, ' ').trim());
    expect(ep[0]).toMatch(/^GET \/orders5040(\.0)? ms$/);
    expect(ep[1]).toMatch(/^POST \/checkout11900 ms$/);
    // Recent errors: the failed checkout, and the stream filtered to this consumer's errors.
    const recent = page.getByTestId('recent-Recent errors');
    await expect.poll(() => recent.locator('tbody tr').count(), { timeout: 15_000 }).toBe(1);
    expect(await recent.locator('tbody tr').textContent()).toContain('/checkout');
    const streamHref = await recent.getByRole('link', { name: 'All in the stream →' }).getAttribute('href');
    expect(new URLSearchParams(streamHref!.split('?')[1]).get('q')).toBe('consumer:cus_acme status:>=400');
    await expectNoSeriousAxeViolation();
    await screenshot(page, 'consumer-page-1440');
    await page.setViewportSize({ width: 390, height: 844 });
    // The endpoints table fits a phone's width: no sideways scroll to reach p95.
    const wrap = page.getByTestId('consumer-endpoints').locator('xpath=..');
    await expect.poll(() => wrap.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
    await screenshot(page, 'consumer-page-390');
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it("renames the consumer and sets its group; the API's refusal is shown in the form", async () => {
    const name = page.getByLabel('Name', { exact: true });
    const group = page.getByLabel('Group', { exact: true });
    expect(await name.inputValue()).toBe('Acme Ltd');
    expect(await group.inputValue()).toBe('enterprise');
    // Nothing changed yet: nothing to save.
    expect(await page.getByRole('button', { name: 'Save' }).isDisabled()).toBe(true);
    // Over 256 characters: the API's 400 message, in the form. Only the changed field is sent.
    await name.fill('x'.repeat(300));
    const put = page.waitForRequest((r) => r.method() === 'PUT' && r.url().includes('/consumers/cus_acme'));
    await page.getByRole('button', { name: 'Save' }).click();
    expect((await put).postDataJSON()).toEqual({ name: 'x'.repeat(300) });
    const refusal = page.locator('.form-error');
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(/256/);
    await name.fill('Acme Corporation');
    await group.fill('gold');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: /^Acme Corporation/, level: 1 }).waitFor();
    expect(await refusal.count()).toBe(0);
    const stored = await apiCall('GET', `/v1/accounts/${accountSid}/consumers/cus_acme`);
    expect([stored.name, stored.group]).toEqual(['Acme Corporation', 'gold']);
    // The list shows the new name and group.
    await page.getByRole('link', { name: '← Consumers' }).click();
    await expect.poll(firstCells).toContain('Acme Corporation');
    const row = rows().filter({ hasText: 'Acme Corporation' });
    expect((await row.locator('td').nth(1).textContent())?.trim()).toBe('gold');
    // Only the deliberate 400 reached the console.
    expect(me.errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
  });

  it('says how to identify consumers when a bucket has none, linking to its setup page', async () => {
    const quiet = await apiCall('POST', `/v1/accounts/${accountSid}/buckets`, { name: 'Quiet API' });
    await page.goto(`/consumers?bucket=${String(quiet.sid)}&range=24h`);
    await page.getByText('No consumers in this range').waitFor();
    expect(await rows().count()).toBe(0);
    const setup = page.getByRole('link', { name: "bucket's setup page" });
    expect(await setup.getAttribute('href')).toBe(`/settings/buckets/${String(quiet.sid)}`);
    expect(await page.locator('.state-empty').textContent()).toContain('tapline.identify');
    await screenshot(page, 'consumers-empty-1440');
  });
});
