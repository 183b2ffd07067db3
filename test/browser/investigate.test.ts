import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import {
  launchBrowser,
  openPage,
  pageDay,
  screenshot,
  SESSION_RATE_LIMIT,
  type OpenedPage,
  signIn,
} from '../helpers/browser.js';

const env = inject('browserEnv');

const MIN = 60_000;

/**
 * The dashboard as a place to investigate, in real Chromium against the real stack: charts that
 * end at now with the current bucket marked, every event marker flagged on every chart, drag to
 * zoom, a shared cursor, the previous period, errors over time linking to the stream, a stream with
 * a time range and dates, dark mode, polling that stops while the tab is hidden, and the frame that
 * stays when the API quota is used up.
 */
describe('dashboard: investigate', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `investigate-${tag}@example.test`;
  const password = 'investigate password 1';
  let accountSid = '';
  let bucketSid = '';
  let apiToken = '';
  const now = Date.now();
  /** The 503s of the last 12 minutes (every fourth minute from the first), and yesterday's. */
  const RECENT_503 = [1, 5, 9].map((i) => now - i * MIN - 15_000);
  const YESTERDAY_503 = [0, 1, 2].map((i) => now - 26 * 60 * MIN - i * MIN);

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

  const rec = (path: string, method: string, status: number, at: number) => ({
    createdAt: new Date(at).toISOString(),
    request: { method, path, host: 'shop.example.com', headers: {} },
    response: { statusCode: status },
    timings: { duration: status >= 500 ? 900 : 40 },
  });

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, {
        name: `Investigate ${tag}`,
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
    // The last 12 minutes: 200s, 404s and 503s; 70 minutes ago (the previous period of "last
    // hour"); and 503s of yesterday, which a "last hour" stream must not show.
    const records = [];
    for (let i = 0; i < 12; i++) {
      records.push(rec('/orders', 'GET', 200, now - i * MIN - 5_000));
      records.push(rec('/orders', 'GET', 200, now - i * MIN - 20_000));
      if (i % 3 === 0) records.push(rec('/coupons/XMAS24', 'GET', 404, now - i * MIN - 10_000));
    }
    for (const at of RECENT_503) records.push(rec('/checkout', 'POST', 503, at));
    for (let i = 0; i < 6; i++) records.push(rec('/orders', 'GET', 200, now - 70 * MIN - i * MIN));
    for (const at of YESTERDAY_503) records.push(rec('/checkout', 'POST', 503, at));
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    expect(((await res.json()) as { accepted: number }).accepted).toBe(records.length);
    // Stored (the processor writes them to ClickHouse): the list holds every one of them.
    const since = new Date(now - 3 * 86_400_000).toISOString();
    let stored = 0;
    for (let i = 0; i < 60 && stored < records.length; i++) {
      if (i) await new Promise((r) => setTimeout(r, 1_000));
      const list = await apiCall(
        'GET',
        `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests?limit=100&startDate=${since}`,
      );
      stored = (list.records as unknown[]).length;
    }
    expect(stored).toBe(records.length);

    // The newest deployment 3 minutes ago, an incident 40 minutes ago, one 3 days ago (outside).
    for (const [type, name, at] of [
      ['deployment', 'Deploy v42', now - 3 * MIN],
      ['incident', 'Checkout slow', now - 40 * MIN],
      ['deployment', 'Deploy v41', now - 3 * 86_400_000],
    ] as const)
      await apiCall('POST', `/v1/accounts/${accountSid}/events`, {
        type,
        name,
        startedAt: new Date(at).toISOString(),
        bucketSids: [bucketSid],
      });

    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl, { width: 1440, height: 900 });
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
  });

  const CHARTS = ['Throughput', 'Response time', 'Error rate'];

  async function openOverview(query = 'range=1h'): Promise<void> {
    await page.goto(`/overview?bucket=${bucketSid}&${query}`);
    for (const c of CHARTS) await page.getByTestId(`chart-${c}`).locator('.u-over').waitFor();
  }

  it('ends the charts at now: no bucket that starts in the future, the current one marked partial', async () => {
    await openOverview();
    for (const c of CHARTS) {
      const plot = page.getByTestId(`chart-${c}`);
      await expect.poll(() => plot.getAttribute('data-last-bucket'), { timeout: 20_000 }).not.toBeNull();
      const shownAt = Date.now();
      const last = Date.parse((await plot.getAttribute('data-last-bucket'))!);
      expect(last).toBeLessThanOrEqual(shownAt);
      // The current minute is the partial bucket, and the caption says so.
      expect(await plot.getAttribute('data-partial-bucket')).toBe(
        new Date(Math.floor(shownAt / MIN) * MIN).toISOString(),
      );
    }
    expect(await page.getByTestId('partial-note').first().textContent()).toMatch(
      /the minute since .* is still in progress/,
    );
  });

  it('flags every marker in the range on every chart, the newest included, with a hover card and a keyboard button', async () => {
    await openOverview();
    for (const c of CHARTS) {
      const flags = page.getByTestId(`chart-${c}`).getByTestId('event-marker');
      await expect.poll(() => flags.count(), { timeout: 20_000 }).toBe(2);
      const labels = await flags.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
      expect(labels.some((l) => l?.includes('Deploy v42'))).toBe(true);
      expect(labels.some((l) => l?.includes('Checkout slow'))).toBe(true);
      // Three days ago lies outside the last hour: no flag, no line past the chart.
      expect(labels.some((l) => l?.includes('Deploy v41'))).toBe(false);
    }
    const newest = page.getByTestId('chart-Error rate').getByRole('button', { name: /Deploy v42/ });
    await newest.hover();
    const card = page.getByRole('tooltip');
    await expect.poll(() => card.textContent()).toContain('Deploy v42');
    await screenshot(page, 'e-markers-hover');
    await page.mouse.move(0, 0);
    await newest.focus();
    await expect.poll(() => card.textContent()).toContain('Deploy v42');
    // Every flag lies within the plot.
    for (const c of CHARTS) {
      const over = (await page.getByTestId(`chart-${c}`).locator('.u-over').boundingBox())!;
      for (const f of await page.getByTestId(`chart-${c}`).getByTestId('event-marker').all()) {
        const b = (await f.boundingBox())!;
        expect(b.x + b.width / 2).toBeGreaterThanOrEqual(over.x - 1);
        expect(b.x + b.width / 2).toBeLessThanOrEqual(over.x + over.width + 1);
      }
    }
  });

  it('draws the previous period faintly and shares the cursor across the charts', async () => {
    await openOverview();
    const legend = (c: string) => page.getByTestId(`chart-${c}`).locator('.u-legend');
    await expect.poll(() => legend('Throughput').textContent()).toContain('previous period');
    await expect.poll(() => legend('Response time').textContent()).toContain('p95, previous period');
    const over = page.getByTestId('chart-Throughput').locator('.u-over');
    const cursorOff = (c: string) =>
      page
        .getByTestId(`chart-${c}`)
        .locator('.u-cursor-x')
        .evaluate((el) => el.classList.contains('u-off'));
    await page.mouse.move(0, 0);
    expect(await cursorOff('Response time')).toBe(true);
    // The pointer is moved over the Throughput chart on every try, where the chart is then: a chart
    // drawn again after the data arrives (a new plot under a still pointer) sees no pointer event
    // until the next one.
    let step = 0;
    const hoverThroughput = async () => {
      const box = (await over.boundingBox())!;
      step = (step + 1) % 5;
      await page.mouse.move(box.x + box.width * (0.45 + step * 0.02), box.y + box.height / 2);
    };
    await expect
      .poll(async () => {
        await hoverThroughput();
        return cursorOff('Response time');
      })
      .toBe(false);
    expect(await cursorOff('Error rate')).toBe(false);
    await screenshot(page, 'e-shared-cursor');
  });

  it('zooms by dragging across a chart (range and URL follow); a click still adds a marker', async () => {
    await openOverview();
    const over = page.getByTestId('chart-Response time').locator('.u-over');
    const box = (await over.boundingBox())!;
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + box.width * 0.25, y);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.75, y, { steps: 8 });
    await page.mouse.up();
    await expect.poll(() => new URL(page.url()).searchParams.get('range')).toBe('custom');
    const url = new URL(page.url());
    const from = Date.parse(url.searchParams.get('from')!);
    const to = Date.parse(url.searchParams.get('to')!);
    // About the middle half of the last hour.
    expect(to - from).toBeGreaterThan(20 * MIN);
    expect(to - from).toBeLessThan(40 * MIN);
    expect(from).toBeGreaterThan(now - 60 * MIN);
    // The charts draw the zoomed range only: no bucket past its end, none before its start.
    for (const c of CHARTS)
      await expect
        .poll(async () =>
          Date.parse((await page.getByTestId(`chart-${c}`).getAttribute('data-last-bucket')) ?? ''),
        )
        .toBeLessThanOrEqual(to);
    // The drag was not taken as a click: no marker dialog.
    expect(await page.locator('dialog[open]').count()).toBe(0);
    // The range picker shows the zoomed range as a custom one.
    expect(await page.getByRole('combobox', { name: 'Time range' }).inputValue()).toBe('custom');
    await screenshot(page, 'e-zoomed');

    await openOverview();
    const eb = (await page.getByTestId('chart-Error rate').locator('.u-over').boundingBox())!;
    await page.mouse.click(eb.x + eb.width * 0.6, eb.y + eb.height / 2);
    await page.locator('dialog[open]').getByRole('heading', { name: 'Add an event marker' }).waitFor();
    await page.keyboard.press('Escape');
  });

  it('says a zoomed quiet range has no traffic in it, with a way back, not "No traffic yet"', async () => {
    await openOverview();
    // 50 to 30 minutes ago: between the last 12 minutes and the traffic of 70 minutes ago.
    const from = new Date(now - 50 * MIN).toISOString();
    const to = new Date(now - 30 * MIN).toISOString();
    await page.goto(`/overview?bucket=${bucketSid}&range=custom&from=${from}&to=${to}`);
    await page.getByText('No traffic in this range').waitFor();
    expect(await page.getByText(/No traffic yet/).count()).toBe(0);
    await screenshot(page, 'e-zoomed-quiet');
    await page.getByRole('button', { name: '← Back to the previous range' }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('range')).toBe('1h');
    await page.getByTestId('chart-Throughput').waitFor();
    expect(await page.getByText('No traffic in this range').count()).toBe(0);
    // Or straight to the last 30 days.
    await page.goto(`/overview?bucket=${bucketSid}&range=custom&from=${from}&to=${to}`);
    await page.getByRole('button', { name: 'Show the last 30 days' }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('range')).toBe('30d');
    expect(me.errors).toEqual([]);
  });

  it('shows errors over time by status class; a point opens the stream for that minute and status', async () => {
    await page.goto(`/errors?bucket=${bucketSid}&range=1h`);
    const chart = page.getByTestId('chart-Errors over time');
    await chart.locator('.u-over').waitFor();
    await expect.poll(() => chart.locator('.u-legend').textContent()).toMatch(/4xx.*5xx/s);
    await screenshot(page, 'e-errors-1440');
    // The minute of the 503 about a minute ago (1 × 5xx, no 4xx): a click at its top is its 5xx point.
    const at = Math.floor((now - MIN - 15_000) / MIN) * MIN;
    const box = (await chart.locator('.u-over').boundingBox())!;
    // The x scale runs from the range's start (an hour before the next whole minute) to now.
    const clickedAt = Date.now();
    const rangeStart = Math.ceil(clickedAt / MIN) * MIN - 60 * MIN;
    const xFrac = (at - rangeStart) / (clickedAt - rangeStart);
    await page.mouse.click(box.x + box.width * xFrac, box.y + 3);
    await page.waitForURL(/\/stream\?/);
    const url = new URL(page.url());
    expect(url.searchParams.get('q')).toBe('status:5xx');
    expect(url.searchParams.get('range')).toBe('custom');
    expect(url.searchParams.get('from')).toBe(new Date(at).toISOString());
    expect(url.searchParams.get('to')).toBe(new Date(at + MIN).toISOString());
    const table = page.getByRole('region', { name: 'Requests' });
    await expect.poll(() => table.locator('tbody tr').count(), { timeout: 20_000 }).toBe(1);
    expect(await table.locator('tbody tr').first().textContent()).toContain('503');
    // A range in the past: nothing to tail.
    expect(await page.getByTestId('live-state').textContent()).toContain('Not live');
    await screenshot(page, 'e-stream-from-errors-point');
  });

  it('gives the stream a time range, honoured from the Errors page link, and dates once rows span days', async () => {
    await page.goto(`/errors?bucket=${bucketSid}&range=1h`);
    await page.getByRole('link', { name: 'requests →' }).first().waitFor();
    const row503 = page.locator('tr', { hasText: '503' }).first();
    await row503.getByRole('link', { name: 'requests →' }).click();
    await page.waitForURL(/\/stream\?/);
    expect(new URL(page.url()).searchParams.get('range')).toBe('1h');
    const table = page.getByRole('region', { name: 'Requests' });
    await table.locator('tbody tr').first().waitFor();
    const times = await table
      .locator('tbody td.stream-time')
      .evaluateAll((els) => els.map((e) => e.getAttribute('title') ?? ''));
    // Only the last hour's 503s (3 of them), not yesterday's. Their dates show only when they
    // fall on two days in the page's time zone (a run just after its midnight).
    expect(times.length).toBe(3);
    const recentDays = new Set(RECENT_503.map(pageDay)).size;
    expect(await table.locator('.stream-date').count()).toBe(recentDays > 1 ? 3 : 0);
    expect(await page.getByRole('combobox', { name: 'Time range' }).inputValue()).toBe('1h');
    await screenshot(page, 'e-stream-1h');

    await page.getByRole('combobox', { name: 'Time range' }).selectOption('7d');
    await expect.poll(() => table.locator('tbody tr').count(), { timeout: 20_000 }).toBe(6);
    // Rows of today and yesterday: each row shows its date.
    expect(await table.locator('.stream-date').count()).toBe(6);
    const dates = await table.locator('.stream-date').allTextContents();
    const days = new Set([...RECENT_503, ...YESTERDAY_503].map(pageDay)).size;
    expect(days).toBeGreaterThanOrEqual(2);
    expect(new Set(dates.map((d) => d.trim())).size).toBe(days);
    await screenshot(page, 'e-stream-7d-1440');
    expect(me.errors).toEqual([]);
  });

  it('stops polling while the tab is hidden and catches up as soon as it is shown', async () => {
    const calls: { url: string; at: number }[] = [];
    const running = new Set<Request>();
    page.on('request', (r) => {
      if (!r.url().includes('/v1/')) return;
      calls.push({ url: r.url(), at: Date.now() });
      running.add(r);
    });
    page.on('requestfinished', (r) => running.delete(r));
    page.on('requestfailed', (r) => running.delete(r));
    await openOverview();
    // The Page Visibility API as a hidden tab reports it (headless Chromium never hides a page).
    // Answers the page's clock (performance.now()) at the change, after clearing its resource
    // timings: the calls the page starts from then on are read from its own resource timings, so
    // the test process's event delivery, seconds late on a loaded machine, does not count.
    const setVisibility = (hidden: boolean) =>
      page.evaluate<number>(
        `(() => {
          performance.clearResourceTimings();
          const at = performance.now();
          Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => '${hidden ? 'hidden' : 'visible'}' });
          Object.defineProperty(document, 'hidden', { configurable: true, get: () => ${hidden} });
          document.dispatchEvent(new Event('visibilitychange', { bubbles: true }));
          return at;
        })()`,
      );
    /** Page-clock start times of the /v1 calls (finished ones) since the last change, matching `part`. */
    const startedSince = (at: number, part: string) =>
      page.evaluate<number[]>(
        `performance.getEntriesByType('resource')
          .filter((e) => e.name.includes('/v1/') && e.name.includes(${JSON.stringify(part)}) && e.startTime >= ${at})
          .map((e) => e.startTime - ${at})`,
      );
    // Hidden only once the page's first calls have answered: a call still running when the tab
    // is shown makes the query client wait for it instead of asking again.
    await expect.poll(() => running.size, { timeout: 20_000 }).toBe(0);
    const hiddenAt = await setVisibility(true);
    // Longer than the 10 s refresh interval.
    await page.waitForTimeout(13_000);
    expect(await startedSince(hiddenAt, '/v1/')).toEqual([]);
    const shownAt = await setVisibility(false);
    // A metrics call starts within 2 s of the page's clock of being shown, well before the next
    // 10 s refresh would come.
    await expect
      .poll(() => startedSince(shownAt, '/metrics/'), { timeout: 20_000, interval: 200 })
      .not.toEqual([]);
    expect(Math.min(...(await startedSince(shownAt, '/metrics/')))).toBeLessThan(2000);

    // The stream's live tail disconnects while hidden and reconnects after its last event.
    await page.goto(`/stream?bucket=${bucketSid}&range=1h`);
    await expect
      .poll(() => page.getByTestId('live-state').textContent(), { timeout: 20_000 })
      .toContain('Live');
    await setVisibility(true);
    const liveCalls = () => calls.filter((c) => c.url.includes('/requests/live')).length;
    const before = liveCalls();
    await setVisibility(false);
    await expect.poll(liveCalls, { timeout: 5_000 }).toBeGreaterThan(before);
    await expect
      .poll(() => page.getByTestId('live-state').textContent(), { timeout: 20_000 })
      .toContain('Live');
  });

  it('follows the system theme, keeps a picked one, and draws the charts readably in both', async () => {
    const bg = () => page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor');
    // Pixels of the y axis labels (the canvas's left 60 px) drawn in a colour: the theme's muted text.
    const axisPixels = ([r, g, b]: [number, number, number]) =>
      page.evaluate<number>(
        `(() => {
          const c = document.querySelector('[data-testid="chart-Throughput"] canvas');
          const d = c.getContext('2d').getImageData(0, 0, Math.min(60, c.width), c.height).data;
          let n = 0;
          for (let i = 0; i < d.length; i += 4)
            if (d[i + 3] > 200 && Math.abs(d[i] - ${r}) + Math.abs(d[i + 1] - ${g}) + Math.abs(d[i + 2] - ${b}) < 24) n++;
          return n;
        })()`,
      );
    const DARK_MUTED: [number, number, number] = [0xa3, 0xac, 0xbb];
    const LIGHT_MUTED: [number, number, number] = [0x5b, 0x61, 0x70];
    const stored = () => page.evaluate<string | null>("localStorage.getItem('tapline.theme')");
    await page.emulateMedia({ colorScheme: 'dark' });
    await openOverview();
    expect(await page.getByRole('combobox', { name: 'Theme' }).inputValue()).toBe('system');
    const dark = await bg();
    expect(dark).toBe('rgb(15, 19, 27)');
    // The axis labels follow the theme's muted text colour.
    await expect.poll(() => axisPixels(DARK_MUTED), { timeout: 10_000 }).toBeGreaterThan(20);
    expect(await axisPixels(LIGHT_MUTED)).toBe(0);
    for (const [w, h] of [
      [1440, 900],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width: w, height: h });
      for (const p of ['overview', 'errors', 'stream']) {
        await page.goto(`/${p}?bucket=${bucketSid}&range=${p === 'stream' ? '7d' : '1h'}`);
        await page.locator('.page h1').waitFor();
        await page.waitForLoadState('networkidle').catch(() => undefined);
        await screenshot(page, `e-${p}-${w}-dark`);
      }
    }
    await page.setViewportSize({ width: 1440, height: 900 });
    await openOverview();
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('light');
    expect(await bg()).toBe('rgb(245, 246, 248)');
    expect(await stored()).toBe('light');
    await expect.poll(() => axisPixels(LIGHT_MUTED), { timeout: 10_000 }).toBeGreaterThan(20);
    expect(await axisPixels(DARK_MUTED)).toBe(0);
    // A reload keeps the pick over the system's dark setting.
    await page.reload();
    await page.locator('.page h1').waitFor();
    expect(await bg()).toBe('rgb(245, 246, 248)');
    for (const [w, h] of [
      [1440, 900],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width: w, height: h });
      for (const p of ['overview', 'errors', 'stream']) {
        await page.goto(`/${p}?bucket=${bucketSid}&range=${p === 'stream' ? '7d' : '1h'}`);
        await page.locator('.page h1').waitFor();
        await page.waitForLoadState('networkidle').catch(() => undefined);
        await screenshot(page, `e-${p}-${w}-light`);
      }
    }
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('system');
    expect(await stored()).toBeNull();
    expect(await bg()).toBe(dark);
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it("keeps a signed-in person's page working past the plan's quota, and the API token keeps all of it", async () => {
    const quota = 30;
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    const quotaEmail = `quota-${tag}@example.test`;
    let acc: Awaited<ReturnType<typeof createAccount>>;
    try {
      acc = await createAccount(pool, {
        name: `Quota ${tag}`,
        email: quotaEmail,
        password,
        plan: 'enterprise',
        rateLimit: quota,
        bucketName: 'Quota API',
      });
    } finally {
      await pool.end();
    }
    const ingest = await fetch(`${env.ingestUrl}/v1/buckets/${acc.bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acc.apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records: [0, 1, 2].map((i) => rec('/orders', 'GET', 200, now - i * 1000)) }),
    });
    expect(ingest.status).toBe(202);
    const otherBrowser = await launchBrowser();
    const other = await openPage(otherBrowser, env.apiUrl, { width: 1440, height: 900 });
    try {
      await signIn(other.page, quotaEmail, password);
      // The page polls while the person's own calls go well past the plan's 30 per hour.
      for (let i = 0; i < quota * 2; i++) {
        const res = await other.context.request.get(`${env.apiUrl}/v1/authentication/session`);
        expect(res.status()).toBe(200);
      }
      await other.page.goto(`/overview?bucket=${acc.bucketSid}&range=1h`);
      const tile = other.page.getByTestId('tile-Requests');
      await expect
        .poll(async () => Number(((await tile.textContent()) ?? '').replace(/[^0-9]/g, '') || '0'), {
          timeout: 60_000,
        })
        .toBe(3);
      expect(await other.page.getByTestId('rate-limit-notice').count()).toBe(0);
      await screenshot(other.page, 'e-session-past-quota-1440');
      // The account's API token still has its whole quota: the session spent none of it.
      const res = await fetch(`${env.apiUrl}/v1/accounts/${acc.accountSid}/buckets`, {
        headers: { authorization: `Bearer ${acc.apiToken}` },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(quota - 1));
    } finally {
      await otherBrowser.close();
    }
  });

  it('keeps the frame and says when the quota resets once the API answers 429', async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    const limitedEmail = `limited-${tag}@example.test`;
    try {
      await createAccount(pool, {
        name: `Limited ${tag}`,
        email: limitedEmail,
        password,
        plan: 'enterprise',
        rateLimit: 30,
      });
    } finally {
      await pool.end();
    }
    // Another person: a browser of their own (one context per Chromium process, as in the other tests).
    const otherBrowser = await launchBrowser();
    const other = await openPage(otherBrowser, env.apiUrl, { width: 1440, height: 900 });
    try {
      await signIn(other.page, limitedEmail, password);
      // Spend the person's own bound (SESSION_RATE_LIMIT of the browser stack) with the page's
      // session: a session never spends the plan's quota, so its 429 comes from that bound.
      // 25 at a time: thousands of calls one after the other take minutes on a busy machine.
      let reset = '';
      for (let sent = 0; sent < SESSION_RATE_LIMIT + 50 && !reset; sent += 25) {
        const answers = await Promise.all(
          Array.from({ length: 25 }, () =>
            other.context.request.get(`${env.apiUrl}/v1/authentication/session`),
          ),
        );
        const limited = answers.find((res) => res.status() === 429);
        if (limited) reset = limited.headers()['x-ratelimit-reset'] ?? '';
      }
      expect(reset).not.toBe('');
      await other.page.goto('/overview');
      const notice = other.page.getByTestId('rate-limit-notice');
      await notice.waitFor();
      expect(await notice.locator('time').getAttribute('datetime')).toBe(
        new Date(Number(reset) * 1000).toISOString(),
      );
      // The page's error box gives the API's message once, without the reset time the notice
      // above it already says.
      const refused = other.page.getByRole('alert').filter({ hasText: 'RATE_LIMIT_EXCEEDED' });
      await refused.waitFor();
      expect(await refused.textContent()).not.toContain('It resets at');
      // The menu stays: navigation to the other pages.
      const nav = other.page.getByRole('navigation', { name: 'Main' });
      await nav.getByRole('link', { name: 'Errors' }).waitFor();
      await screenshot(other.page, 'e-rate-limited-1440');
      await other.page.setViewportSize({ width: 390, height: 844 });
      await other.page.getByRole('button', { name: 'Menu' }).waitFor();
      await screenshot(other.page, 'e-rate-limited-390');
      // Sign out stays in the header and ends the session, though the person is past their bound.
      await other.page.getByRole('button', { name: 'Sign out' }).click();
      await other.page.waitForURL(/\/signin/);
      await other.page.getByLabel('Email').waitFor();
      const after = await other.context.request.get(`${env.apiUrl}/v1/authentication/session`);
      expect(after.status()).toBe(401);
    } finally {
      await otherBrowser.close();
    }
  });

  it('lists endpoints per method with a sparkline, percentiles and sizes; an endpoint page shows status codes, the distribution, recent requests and errors', async () => {
    // POST /orders beside GET /orders: three 201s and a 422 within one minute, 2,000 bytes each.
    const at = Math.floor((now - 2 * MIN) / MIN) * MIN + 30_000;
    const posts = [201, 201, 201, 422].map((status, i) => ({
      ...rec('/orders', 'POST', status, at + i * 1000),
      request: { method: 'POST', path: '/orders', host: 'shop.example.com', headers: {}, size: 500 },
      response: { statusCode: status, size: 1500 },
      timings: { duration: status === 422 ? 15 : 120 },
    }));
    const sent = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records: posts }),
    });
    expect(sent.status, await sent.clone().text()).toBe(202);

    await page.goto(`/endpoints?bucket=${bucketSid}&range=1h`);
    const rows = page.getByTestId('endpoint-row');
    const row = (method: string, endpoint: string) =>
      rows
        .filter({ has: page.getByRole('cell', { name: method, exact: true }) })
        .filter({ has: page.getByRole('link', { name: endpoint, exact: true }) });
    const post = row('POST', '/orders');
    // Each row's cells: method, endpoint, sparkline, requests, error rate, average, p50, p95, p99, size.
    const cells = async (r: typeof post) =>
      (await r.getByRole('cell').allTextContents()).map((t) => t.trim());
    await expect.poll(async () => (await cells(post))[3], { timeout: 60_000 }).toBe('4');
    const p = await cells(post);
    expect(p[4]).toBe('25%');
    // p50 is read from the duration histogram: within 1% of the 120 ms sent.
    expect(p[6]).toMatch(/^\d+ ms$/);
    expect(Math.abs(parseFloat(p[6]!) - 120)).toBeLessThanOrEqual(1.2);
    expect(p[9]).toBe('2 KB');
    const get = await cells(row('GET', '/orders'));
    expect(get[3]).toBe('24');
    expect(get[4]).toBe('0%');
    expect(await row('GET', '/checkout').count()).toBe(0);
    expect((await cells(row('POST', '/checkout')))[4]).toBe('100%');
    // The sparkline: the row's requests per minute of the range.
    expect(await post.getByRole('img').getAttribute('aria-label')).toBe(
      'POST /orders requests per minute: 4 requests, at most 4 per minute',
    );
    await screenshot(page, 'e-endpoints-per-method');

    await post.getByRole('link', { name: '/orders' }).click();
    await page.getByRole('heading', { level: 1, name: 'POST /orders' }).waitFor();
    const statuses = page.getByTestId('status-breakdown');
    await statuses.getByRole('row').nth(2).waitFor();
    const statusRows = await statuses.locator('tbody tr').allTextContents();
    expect(statusRows).toHaveLength(2);
    expect(statusRows[0]).toContain('201');
    expect(statusRows[0]).toContain('75%');
    expect(statusRows[1]).toContain('422');
    // The distribution: its bins hold the four response times.
    const histogram = page.getByTestId('latency-histogram');
    await histogram.waitFor();
    const binCounts = await histogram.locator('table tbody tr td:last-child').allTextContents();
    expect(binCounts.reduce((sum, c) => sum + Number(c), 0)).toBe(4);
    expect(await histogram.locator('.histogram-bar').count()).toBe(binCounts.length);
    // Recent requests: all four; recent errors: the 422 only, linking to the stream filtered to it.
    const recent = page.getByTestId('recent-Recent requests');
    await expect.poll(() => recent.locator('tbody tr').count(), { timeout: 20_000 }).toBe(4);
    // Today's rows show their time alone (as the stream does), no date.
    expect(await recent.locator('tbody td').first().textContent()).toMatch(/^\d\d:\d\d:\d\d/);
    const errors = page.getByTestId('recent-Recent errors');
    await expect.poll(() => errors.locator('tbody tr').count()).toBe(1);
    expect(await errors.locator('tbody tr').textContent()).toContain('422');
    await screenshot(page, 'e-endpoint-page');
    await errors.getByRole('link', { name: 'All in the stream →' }).click();
    await page.waitForURL(/\/stream\?/);
    expect(new URL(page.url()).searchParams.get('q')).toBe('endpoint:"/orders" method:POST status:>=400');
    const table = page.getByRole('region', { name: 'Requests' });
    await expect.poll(() => table.locator('tbody tr').count(), { timeout: 20_000 }).toBe(1);
    expect(await table.locator('tbody tr').textContent()).toContain('422');
    expect(me.errors).toEqual([]);
  });
});
