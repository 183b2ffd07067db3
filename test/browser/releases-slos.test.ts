import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { startReceiver } from '../helpers/http-receiver.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');

const MIN = 60_000;
const ENV = 'shop01';

/**
 * The Releases, release, SLOs and SLO pages in real Chromium against the real stack, with
 * traffic backfilled around deployment markers (past `createdAt`): the list's verdict summaries
 * (one judged, one pending), the release page's per-endpoint table and before/after charts, the
 * verdict on a chart marker's hover card (fetched on hover only), the SLOs with their status, an
 * SLO created through the dialog after the API refused a bad objective (its message beside the
 * field), and one SLO's budget, burn-down and the burn-rate alert it raised. Screenshots at 1440
 * and 390 px in the light and the dark theme (.cache/screenshots/releases-*.png, slos-*.png).
 */
describe('dashboard: releases and SLOs', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  const tag = randomBytes(4).toString('hex');
  const email = `releases-${tag}@example.test`;
  const password = 'releases password 1';
  let accountSid = '';
  let bucketSid = '';
  let apiToken = '';
  let judgedSid = '';
  let paySloSid = '';
  // The judged deployment an hour ago, the pending one 5 minutes ago (minute-aligned).
  const t = Math.floor(Date.now() / MIN) * MIN - 60 * MIN;
  const recentDeploy = Math.floor(Date.now() / MIN) * MIN - 5 * MIN;

  async function apiCall(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await fetch(env.apiUrl + path, {
      method,
      headers: {
        authorization: `Bearer ${apiToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  }

  async function created(path: string, body: unknown): Promise<string> {
    const r = await apiCall('POST', path, body);
    expect(r.status, JSON.stringify(r.json)).toBe(201);
    return r.json.sid as string;
  }

  /** `n` calls spread over the 30 minutes from `from`, durations `base` to `base + 9` ms. */
  const calls = (
    method: string,
    path: string,
    from: number,
    n: number,
    base: number,
    status = 200,
    consumer?: { id: string; name?: string; group?: string },
  ) =>
    Array.from({ length: n }, (_, i) => ({
      environmentSid: ENV,
      createdAt: new Date(from + (i % 30) * MIN + 10_000).toISOString(),
      request: { method, path, host: 'shop.example.com', headers: {} },
      response: { statusCode: status },
      timings: { duration: base + (i % 10) },
      ...(consumer ? { consumer } : {}),
    }));
  const acme = { id: 'cus_acme', name: 'Acme Ltd', group: 'enterprise' };
  const globex = { id: 'cus_globex' };

  async function ingest(records: unknown[]): Promise<void> {
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
  }

  const sloBody = (over: Record<string, unknown>) => ({
    name: 'x',
    bucketSid,
    sli: { kind: 'availability' },
    objective: 99,
    windowDays: 7,
    ...over,
  });

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, {
        name: `Releases ${tag}`,
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
    // POST /checkout three times slower after the marker for consumer Acme Ltd, the same for
    // cus_globex; GET /profile the same; /pay outside the windows: 20 calls 3 hours ago (2 failed)
    // and 10 in the last minutes (5 failed).
    await ingest([
      ...calls('POST', '/checkout', t - 30 * MIN, 30, 40, 200, acme),
      ...calls('POST', '/checkout', t + 2 * MIN, 30, 120, 200, acme),
      ...calls('POST', '/checkout', t - 30 * MIN, 30, 40, 200, globex),
      ...calls('POST', '/checkout', t + 2 * MIN, 30, 40, 200, globex),
      ...calls('GET', '/profile', t - 30 * MIN, 60, 50),
      ...calls('GET', '/profile', t + 2 * MIN, 60, 50),
      ...calls('POST', '/pay', Date.now() - 180 * MIN, 18, 30),
      ...calls('POST', '/pay', Date.now() - 180 * MIN, 2, 30, 500),
      ...Array.from({ length: 10 }, (_, i) => ({
        environmentSid: ENV,
        createdAt: new Date(Date.now() - 90_000 + i * 1000).toISOString(),
        request: { method: 'POST', path: '/pay', host: 'shop.example.com', headers: {} },
        response: { statusCode: i % 2 ? 500 : 200 },
        timings: { duration: 30 },
      })),
    ]);
    const events = `/v1/accounts/${accountSid}/events`;
    judgedSid = await created(events, {
      type: 'deployment',
      name: `v1.${tag}`,
      bucketSids: [bucketSid],
      startedAt: new Date(t).toISOString(),
    });
    await created(events, {
      type: 'deployment',
      name: `v2.${tag}`,
      bucketSids: [bucketSid],
      startedAt: new Date(recentDeploy).toISOString(),
    });
    const slos = `/v1/accounts/${accountSid}/slos`;
    paySloSid = await created(
      slos,
      sloBody({ name: 'Pay availability', endpoint: '/pay', method: 'POST', objective: 97 }),
    );
    await created(
      slos,
      sloBody({
        name: 'Profile latency',
        endpoint: '/profile',
        method: 'GET',
        sli: { kind: 'latency', thresholdMs: 200 },
      }),
    );
    rx = await startReceiver();
    await created(`/v1/accounts/${accountSid}/environments/${ENV}/buckets/${bucketSid}/workflows`, {
      name: 'Pay burn page',
      trigger: { type: 'slo_burn', sloSid: paySloSid },
      actions: [{ type: 'webhook', config: { url: `${rx.url}/hook` } }],
    });
    // Stored and aggregated: the judged deployment's windows hold their 240 calls.
    for (let i = 0; i < 90; i++) {
      const r = await apiCall('GET', `${events}/${judgedSid}/impact`);
      const eps = (r.json.endpoints ?? []) as { before: { count: number }; after: { count: number } }[];
      if (eps.reduce((s, e) => s + e.before.count + e.after.count, 0) === 240) break;
      await new Promise((res) => setTimeout(res, 1000));
    }

    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl, { width: 1440, height: 900 });
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
    await rx?.close();
  });

  /** Screenshots at 1440 and 390 px in both themes; at 390 px the page never scrolls sideways. */
  async function shots(name: string, ready: () => Promise<unknown>): Promise<void> {
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      await ready();
      await screenshot(page, `${name}-1440-${colorScheme}`);
      await page.setViewportSize({ width: 390, height: 844 });
      try {
        await screenshot(page, `${name}-390-${colorScheme}`);
        expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')).toBe(
          0,
        );
      } finally {
        await page.setViewportSize({ width: 1440, height: 900 });
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
  }

  it('lists the deployments with their verdict summary, the recent one pending', async () => {
    await page.goto('/releases?range=24h');
    await page.getByRole('heading', { name: 'Releases', level: 1 }).waitFor();
    const judged = page.getByTestId('release-row').filter({ hasText: `v1.${tag}` });
    const pending = page.getByTestId('release-row').filter({ hasText: `v2.${tag}` });
    await expect
      .poll(() => judged.getByTestId('release-verdict').textContent(), { timeout: 30_000 })
      .toBe('1 endpoint regressed');
    await expect
      .poll(() => pending.getByTestId('release-verdict').textContent())
      .toMatch(/^Pending: judged at /);
    // Newest first.
    expect(await page.getByTestId('release-row').first().textContent()).toContain(`v2.${tag}`);
    await shots('releases-list', () => judged.getByTestId('release-verdict').waitFor());
    expect(me.errors).toEqual([]);
  });

  it('shows the release page: endpoints by severity with before/after figures, and charts of the regressed one', async () => {
    await page.goto('/releases?range=24h');
    await page.getByRole('link', { name: `v1.${tag}` }).click();
    await page.getByRole('heading', { name: `v1.${tag}`, level: 1 }).waitFor();
    const rows = page.getByTestId('impact-row');
    await rows.nth(1).waitFor();
    expect(await rows.count()).toBe(2);
    const first = (await rows.nth(0).textContent()) ?? '';
    expect(first).toContain('POST /checkout');
    expect(first).toContain('Regressed');
    expect(first).toContain('60 → 60');
    expect(first).toMatch(/slower: p50 x/);
    const second = (await rows.nth(1).textContent()) ?? '';
    expect(second).toContain('GET /profile');
    expect(second).toContain('Unchanged');
    // p50 of POST /checkout before and after, as the API answers it.
    const api = await apiCall('GET', `/v1/accounts/${accountSid}/events/${judgedSid}/impact`);
    const checkout = (api.json.endpoints as { before: { p50: number }; after: { p50: number } }[])[0]!;
    const cell = (await rows.nth(0).getByRole('cell').nth(3).textContent()) ?? '';
    const fmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
    expect(cell).toContain(
      `${fmt.format(checkout.before.p50)} ms → ${fmt.format(Math.round(checkout.after.p50))} ms`,
    );
    // One chart panel (only /checkout changed), both charts drawn with the marker between the windows.
    const charts = page.getByTestId('impact-charts');
    await charts.first().waitFor();
    expect(await charts.count()).toBe(1);
    expect(await charts.getByRole('heading', { level: 2 }).textContent()).toBe('POST /checkout');
    await expect.poll(() => charts.locator('canvas').count()).toBe(2);
    await expect.poll(() => charts.getByTestId('event-marker').count()).toBe(2);
    expect(await page.getByTestId('impact-summary').textContent()).toContain('Regressed1');
    await shots('releases-release', () => charts.locator('canvas').first().waitFor());
    expect(me.errors).toEqual([]);
  });

  it('shows under the regressed endpoint the consumers it hits, linking to their pages', async () => {
    await page.goto(`/releases/${judgedSid}?range=24h`);
    await page.getByRole('heading', { name: `v1.${tag}`, level: 1 }).waitFor();
    const block = page.getByTestId('impact-consumers');
    await block.waitFor();
    // Only POST /checkout regressed, and only Acme Ltd's calls of it got slower.
    expect(await block.count()).toBe(1);
    expect(await block.locator('p').first().textContent()).toBe('1 of 2 consumers hit · POST /checkout');
    const rows = block.getByTestId('impact-consumer-row');
    expect(await rows.count()).toBe(2);
    const acmeRow = (await rows.nth(0).textContent()) ?? '';
    expect(acmeRow).toContain('Acme Ltd · enterprise');
    expect(acmeRow).toContain('Regressed');
    expect(acmeRow).toContain('30 → 30');
    const globexRow = (await rows.nth(1).textContent()) ?? '';
    expect(globexRow).toContain('cus_globex');
    expect(globexRow).toContain('Unchanged');
    expect(globexRow).toContain('30 → 30');
    // The block sits right under the endpoint's row.
    const next = page.getByTestId('impact-row').first().locator('xpath=following-sibling::tr[1]');
    expect(await next.getByTestId('impact-consumers').count()).toBe(1);
    await shots('releases-consumers', () => block.waitFor());
    await block.getByRole('link', { name: 'Acme Ltd' }).click();
    await page.getByRole('heading', { name: 'Acme Ltd', level: 1 }).waitFor();
    expect(new URL(page.url()).searchParams.get('id')).toBe('cus_acme');
    expect(me.errors).toEqual([]);
  });

  it("shows the verdict on a chart marker's hover card, asking for it only on hover", async () => {
    const asked: string[] = [];
    const onRequest = (r: { url: () => string }) => {
      if (r.url().includes('/impact')) asked.push(r.url());
    };
    page.on('request', onRequest);
    try {
      await page.goto('/overview?range=24h');
      const marker = page
        .getByRole('button', { name: new RegExp(`^deployment event v1\\.${tag} at`) })
        .first();
      await marker.waitFor();
      expect(asked).toEqual([]);
      await marker.hover();
      const card = page.getByRole('tooltip');
      await expect.poll(() => card.getByTestId('release-verdict').textContent()).toBe('1 endpoint regressed');
      expect(asked.length).toBeGreaterThan(0);
      expect(asked.every((u) => u.includes(judgedSid))).toBe(true);
      await screenshot(page, 'releases-marker-card');
      // The marker opens the release page.
      await marker.click();
      await page.getByRole('heading', { name: `v1.${tag}`, level: 1 }).waitFor();
    } finally {
      page.off('request', onRequest);
    }
    expect(me.errors).toEqual([]);
  });

  it('lists the SLOs with their status', async () => {
    await page.goto('/slos');
    await page.getByRole('heading', { name: 'SLOs', level: 1 }).waitFor();
    const pay = page.getByTestId('slo-row').filter({ hasText: 'Pay availability' });
    const profile = page.getByTestId('slo-row').filter({ hasText: 'Profile latency' });
    await pay.getByText('Breaching').waitFor();
    await profile.getByText('OK', { exact: true }).waitFor();
    // 30 calls, 7 failed: SLI 23/30.
    expect(await pay.textContent()).toContain('76.667%');
    expect(await profile.textContent()).toContain('Latency ≤ 200 ms · GET /profile');
    expect(await profile.textContent()).toContain('100%');
    await shots('slos-list', () => pay.getByText('Breaching').waitFor());
    expect(me.errors).toEqual([]);
  });

  it("creates an SLO in the dialog; a bad objective is refused with the API's message beside the field", async () => {
    const refused = await apiCall('POST', `/v1/accounts/${accountSid}/slos`, sloBody({ objective: 100 }));
    expect(refused.status).toBe(400);
    const message = (refused.json.error as { details: Record<string, string> }).details['body.objective']!;
    expect(message).toBeTruthy();

    await page.goto('/slos');
    const since = me.errors.length;
    await page.getByRole('button', { name: 'New SLO' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('Checkout latency');
    await dialog.getByLabel('Method').selectOption('POST');
    await dialog.getByLabel('Endpoint (optional)').fill('/checkout');
    await dialog.getByLabel('Good calls are').selectOption('latency');
    await dialog.getByLabel('Threshold (ms)').fill('250');
    await dialog.getByLabel('Objective (% good)').fill('100');
    await dialog.getByRole('button', { name: 'Create SLO' }).click();
    const error = dialog.locator('#slo-objective-error');
    await expect.poll(() => error.textContent()).toBe(message);
    expect(await dialog.getByLabel('Objective (% good)').getAttribute('aria-invalid')).toBe('true');
    // Chromium reports the refused call as a console error: the one provoked here is expected.
    expect(me.errors.slice(since).every((e) => e.includes('status of 400'))).toBe(true);
    expect(me.errors.length).toBe(since + 1);
    me.errors.splice(since);
    await shots('slos-dialog-error', () => error.waitFor());
    await dialog.getByLabel('Objective (% good)').fill('99.5');
    await dialog.getByRole('button', { name: 'Create SLO' }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = page.getByTestId('slo-row').filter({ hasText: 'Checkout latency' });
    await row.waitFor();
    expect(await row.textContent()).toContain('Latency ≤ 250 ms · POST /checkout');
    const list = await apiCall('GET', `/v1/accounts/${accountSid}/slos`);
    const made = (
      list.json.records as { name: string; sli: unknown; objective: number; endpoint: string }[]
    ).find((s) => s.name === 'Checkout latency');
    expect(made).toMatchObject({
      sli: { kind: 'latency', thresholdMs: 250 },
      objective: 99.5,
      endpoint: '/checkout',
    });
    expect(me.errors).toEqual([]);
  });

  it('shows an SLO: budget left, burn-down, burn rates and the burn-rate alert it raised', async () => {
    // The scheduler pages on the burn (50% failed in the last minutes against 3% allowed).
    for (let i = 0; i < 90 && rx.callsTo('/hook').length === 0; i++)
      await new Promise((res) => setTimeout(res, 1000));
    expect(rx.callsTo('/hook').length).toBe(1);
    const status = await apiCall('GET', `/v1/accounts/${accountSid}/slos/${paySloSid}/status`);
    const budget = (status.json.errorBudget as { remainingPercent: number }).remainingPercent;
    // 7 bad of 30 calls against 3% of 30 = 0.9 allowed: (0.9 - 7) / 0.9.
    expect(budget).toBeCloseTo(((0.9 - 7) / 0.9) * 100, 2);

    await page.goto('/slos');
    await page.getByRole('link', { name: 'Pay availability' }).click();
    await page.getByRole('heading', { name: 'Pay availability', level: 1 }).waitFor();
    const tile = page.getByTestId('slo-budget');
    await tile.waitFor();
    const pct = new Intl.NumberFormat('en-US', { maximumFractionDigits: 3 });
    expect(await tile.textContent()).toContain(`${pct.format(budget)}%`);
    expect(await tile.textContent()).toContain('7 of 0.9 allowed bad calls spent');
    const burn = page.getByTestId('burn-rates');
    expect(await burn.getByRole('cell').count()).toBe(5);
    await expect.poll(() => page.locator('canvas').count()).toBe(2);
    expect(await page.getByRole('figure', { name: 'Error budget left per day' }).count()).toBe(1);
    const alert = page.getByTestId('slo-alert').filter({ hasText: 'Pay burn page' });
    await expect
      .poll(() => alert.getByRole('row').nth(1).textContent(), { timeout: 30_000 })
      .toMatch(/SLO Pay availability: burn rate/);
    // The deployment markers of the SLO's bucket are on its charts.
    expect(await page.getByTestId('event-marker').count()).toBeGreaterThan(0);
    await shots('slos-slo', () => alert.getByRole('row').nth(1).waitFor());
    expect(me.errors).toEqual([]);
  });

  it("draws a window's only day of data as a dot on the SLO's daily chart", async () => {
    // 40 calls of GET /lone in the last minutes of today (UTC), 2 failed: one point per series.
    const dayStart = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    const from = Math.max(dayStart + 1000, Date.now() - 5 * MIN);
    await ingest(
      Array.from({ length: 40 }, (_, i) => ({
        environmentSid: ENV,
        createdAt: new Date(from + i * 1000).toISOString(),
        request: { method: 'GET', path: '/lone', host: 'shop.example.com', headers: {} },
        response: { statusCode: i < 2 ? 500 : 200 },
        timings: { duration: 20 },
      })),
    );
    const sid = await created(
      `/v1/accounts/${accountSid}/slos`,
      sloBody({ name: 'Lone availability', endpoint: '/lone', method: 'GET', objective: 99 }),
    );
    let daily: { sli: number | null }[] = [];
    for (let i = 0; i < 60; i++) {
      const st = await apiCall('GET', `/v1/accounts/${accountSid}/slos/${sid}/status`);
      daily = st.json.daily as { sli: number | null }[];
      if ((st.json.events as { total: number }).total === 40) break;
      await new Promise((res) => setTimeout(res, 1000));
    }
    expect(daily.filter((d) => d.sli !== null).map((d) => d.sli)).toEqual([95]);

    await page.goto(`/slos/${sid}`);
    await page.getByRole('heading', { name: 'Lone availability', level: 1 }).waitFor();
    const chart = page.getByRole('figure', { name: 'SLI per day against the objective' });
    await chart.locator('canvas').waitFor();
    // Pixels of the chart's canvas in a series' colour: the day's dot (#2563eb) rings the
    // window-so-far dot (#7c3aed) drawn inside it at the same place, above the faded partial day.
    const pixels = ([r, g, b]: [number, number, number]) =>
      page.evaluate<number>(
        `(() => {
          const c = document.querySelector('[data-testid="chart-SLI per day against the objective"] canvas');
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          let n = 0;
          for (let i = 0; i < d.length; i += 4)
            if (d[i + 3] > 200 && Math.abs(d[i] - ${r}) + Math.abs(d[i + 1] - ${g}) + Math.abs(d[i + 2] - ${b}) < 12) n++;
          return n;
        })()`,
      );
    await expect.poll(() => pixels([0x25, 0x63, 0xeb])).toBeGreaterThan(10);
    await expect.poll(() => pixels([0x7c, 0x3a, 0xed])).toBeGreaterThan(10);
    await shots('slos-lone-day', () => chart.locator('canvas').waitFor());
    expect(me.errors).toEqual([]);
  });
});
