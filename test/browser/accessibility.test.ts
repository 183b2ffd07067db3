import { randomBytes } from 'node:crypto';
import { AxeBuilder } from '@axe-core/playwright';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import {
  backgroundLuminance,
  launchBrowser,
  openPage,
  screenshot,
  type OpenedPage,
  signIn,
} from '../helpers/browser.js';

const env = inject('browserEnv');
const ENV = 'shop01';
/** The records the redaction checks send: kept out of ENV, whose figures the tiles compare. */
const PAY_ENV = 'pay001';
const CARD = '4111 1111 1111 1111';
/** The axe rules whose outcome depends on colours, which is all a theme changes. */
const COLOUR_RULES = ['color-contrast', 'link-in-text-block'];

/**
 * The dashboard's smaller fixes in real Chromium, and axe-core on every page: one bucket needs no
 * picking, the environment filter lists the environments seen, tile changes say "new" or "no
 * change" without colour, the bucket setup page's Node SDK and OpenTelemetry snippets work as
 * copied, partial redactions and cookies are marked, wide tables at 390 px show that they scroll
 * and keep their buttons in view, a skip link leads past the navigation, and axe finds no serious
 * or critical violation on any page in the light or the dark theme. The same walk saves a
 * screenshot of every page at 1440 px in both themes and at 390 px in the light one
 * (.cache/screenshots/walk-*.png).
 * Every step waits on the page or polls the API.
 */
/**
 * A screenshot's name for a page path: the path's words, each of the test's own sids replaced by
 * what it names (`names`: sid -> word), so that names stay the same from run to run.
 */
function shotName(path: string, names: Record<string, string>): string {
  let p = path;
  for (const [sid, word] of Object.entries(names)) p = p.replaceAll(sid, word);
  return p.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'root';
}

describe('dashboard: accessibility and the smaller fixes', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `a11y-${tag}@example.test`;
  const password = 'a11y password 1';
  let accountSid = '';
  let adminToken = '';
  let bucketSid = '';
  let workflowSid = '';
  let requestSid = '';
  let releaseSid = '';
  let sloSid = '';

  async function apiCall(method: string, path: string, body?: unknown) {
    const res = await fetch(`${env.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  }

  async function ingest(records: unknown[]): Promise<void> {
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    expect(((await res.json()) as { accepted: number }).accepted).toBe(records.length);
  }

  const rec = (path: string, status: number, createdAt: Date, extra: Record<string, unknown> = {}) => ({
    environmentSid: ENV,
    createdAt: createdAt.toISOString(),
    request: { method: 'GET', path, host: 'shop.example.test', headers: { accept: 'application/json' } },
    response: { statusCode: status, headers: { 'content-type': 'application/json' }, body: { ok: true } },
    timings: { duration: 40 },
    ...extra,
  });

  /** Stored records of the bucket matching `q` (the admin token's view). */
  async function stored(q: string): Promise<Record<string, unknown>[]> {
    const r = await apiCall(
      'GET',
      `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests?limit=100&q=${encodeURIComponent(q)}`,
    );
    expect(r.status).toBe(200);
    return r.json.records as Record<string, unknown>[];
  }

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, { name: `A11y ${tag}`, email, password, plan: 'pro' });
      accountSid = acc.accountSid;
      adminToken = acc.apiToken;
    } finally {
      await pool.end();
    }
    const bucket = await apiCall('POST', `/v1/accounts/${accountSid}/buckets`, { name: `Shop ${tag}` });
    expect(bucket.status).toBe(201);
    bucketSid = bucket.json.sid as string;
    // A partial card rule and a password-like keys rule, applied by the processor before storage.
    for (const rule of [
      { type: 'card', level: 'partial' },
      { type: 'password', level: 'full' },
    ]) {
      const r = await apiCall('POST', `/v1/accounts/${accountSid}/redactions`, rule);
      expect(r.status, JSON.stringify(r.json)).toBe(201);
    }
    const token = await apiCall('POST', `/v1/accounts/${accountSid}/apiTokens`, {
      name: 'reporting with a rather long name for a narrow table',
      scopes: ['metrics:read', 'requests:read'],
    });
    expect(token.status).toBe(201);
    const wf = await apiCall(
      'POST',
      `/v1/accounts/${accountSid}/environments/${ENV}/buckets/${bucketSid}/workflows`,
      {
        name: 'Checkout errors',
        trigger: { type: 'error', conditions: [{ statusCode: 503, path: '/checkout' }] },
        actions: [{ type: 'webhook', config: { url: 'https://hooks.example.test/tapline' } }],
      },
    );
    expect(wf.status, JSON.stringify(wf.json)).toBe(201);
    workflowSid = wf.json.sid as string;
    // A deployment marker and an SLO for the release and SLO pages of the walk.
    const deploy = await apiCall('POST', `/v1/accounts/${accountSid}/events`, {
      type: 'deployment',
      name: 'v7',
      bucketSids: [bucketSid],
      startedAt: new Date(Date.now() - 40 * 60_000).toISOString(),
    });
    expect(deploy.status, JSON.stringify(deploy.json)).toBe(201);
    releaseSid = deploy.json.sid as string;
    const slo = await apiCall('POST', `/v1/accounts/${accountSid}/slos`, {
      name: 'Shop availability',
      bucketSid,
      sli: { kind: 'availability' },
      objective: 99.5,
      windowDays: 7,
    });
    expect(slo.status, JSON.stringify(slo.json)).toBe(201);
    sloSid = slo.json.sid as string;

    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl, { width: 1440, height: 900 });
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("stores the traffic the pages show, redacted by the account's rules", async () => {
    // The same traffic now and an hour and a half ago (the previous period of "last hour").
    const now = Date.now();
    const batch = (at: number) =>
      Array.from({ length: 10 }, (_, i) =>
        rec(i % 2 ? '/orders' : '/products', 200, new Date(at - i * 1000)),
      );
    await ingest([...batch(now - 90 * 60_000), ...batch(now - 5_000)]);
    await expect.poll(async () => (await stored('')).length, { timeout: 60_000 }).toBe(20);
    // The redaction rules reach the processor through a reload: send until one is applied.
    await expect
      .poll(
        async () => {
          await ingest([
            rec('/pay', 201, new Date(), {
              environmentSid: PAY_ENV,
              request: {
                method: 'POST',
                path: '/pay',
                headers: { cookie: 'sid=s3cr3t-session', 'content-type': 'application/json' },
                body: { card: CARD, amount: 12 },
              },
            }),
          ]);
          const list = await stored('path:/pay');
          const done = list.find(
            (r) => JSON.stringify(r).includes('1111') && !JSON.stringify(r).includes(CARD),
          );
          requestSid = (done?.sid as string | undefined) ?? '';
          return requestSid !== '' && JSON.stringify(done).includes('[REDACTED:cookie]');
        },
        { timeout: 60_000, interval: 1000 },
      )
      .toBe(true);
  });

  it('with one bucket, pages show it without asking to pick one', async () => {
    await page.goto('/stream');
    await page.getByRole('heading', { name: 'Stream', level: 1 }).waitFor();
    await page.waitForURL(new RegExp(`[?&]bucket=${bucketSid}`));
    const select = page.getByLabel('Bucket', { exact: true });
    expect(await select.locator('option').allTextContents()).toEqual([`Shop ${tag}`]);
    await page
      .getByRole('link', { name: /\/products/ })
      .first()
      .waitFor();
    expect(await page.getByText('Pick a bucket').count()).toBe(0);
    expect(me.errors).toEqual([]);
  });

  it('says "no change" without colour, and "new" when the previous period had nothing', async () => {
    await page.goto(`/overview?range=1h&env=${ENV}`);
    const requests = page.getByTestId('tile-change-Requests');
    await expect.poll(() => requests.textContent(), { timeout: 30_000 }).toBe('no change vs previous period');
    expect(await requests.getAttribute('class')).toBe('tile-change');
    const errorRate = page.getByTestId('tile-change-Error rate');
    expect(await errorRate.textContent()).toBe('no change vs previous period');
    expect(await errorRate.getAttribute('class')).toBe('tile-change');
    await screenshot(page, 'a11y-01-overview-no-change');

    // Last 15 minutes: the 15 minutes before had no traffic at all.
    await page.goto(`/overview?range=15m&env=${ENV}`);
    await expect
      .poll(() => requests.textContent(), { timeout: 30_000 })
      .toBe('new: little or no traffic in the previous period');
    expect(await requests.getAttribute('class')).toBe('tile-change');
    expect(await page.getByText(/\d{4,}(\.\d)?% vs previous period/).count()).toBe(0);
    expect(me.errors).toEqual([]);
  });

  it('offers Node SDK and OpenTelemetry snippets; the copied OpenTelemetry settings deliver a span', async () => {
    await page.goto(`/settings/buckets/${bucketSid}`);
    await page.getByRole('heading', { name: 'From your app' }).waitFor();
    const node = (await page.getByTestId('node-sdk-snippet').textContent()) ?? '';
    expect(node).toContain("import { Tapline } from '@tapline/node';");
    expect(node).toContain(`bucketSid: '${bucketSid}'`);
    expect(node).toContain(`endpoint: '${env.ingestUrl}'`);
    const otel = (await page.getByTestId('otel-snippet').textContent()) ?? '';
    const vars = Object.fromEntries(
      [...otel.matchAll(/^export (\w+)="?([^"\n]*)"?$/gm)].map((m) => [m[1]!, m[2]!]),
    );
    expect(vars.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL).toBe('http/protobuf');
    // The exporter's header list: comma-separated name=value pairs, values percent-encoded.
    const headers = Object.fromEntries(
      vars
        .OTEL_EXPORTER_OTLP_TRACES_HEADERS!.replace('$TAPLINE_TOKEN', adminToken)
        .split(',')
        .map((kv) => [kv.slice(0, kv.indexOf('=')), decodeURIComponent(kv.slice(kv.indexOf('=') + 1))]),
    );
    const start = BigInt(Date.now()) * 1_000_000n;
    const res = await fetch(vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT!, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [] },
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: randomBytes(16).toString('hex'),
                    spanId: randomBytes(8).toString('hex'),
                    name: 'GET /otel-probe',
                    kind: 2,
                    startTimeUnixNano: String(start),
                    endTimeUnixNano: String(start + 7_000_000n),
                    attributes: [
                      { key: 'http.request.method', value: { stringValue: 'GET' } },
                      { key: 'url.path', value: { stringValue: `/otel-probe-${tag}` } },
                      { key: 'http.response.status_code', value: { intValue: 200 } },
                    ],
                  },
                ],
              },
            ],
          },
        ],
      }),
    });
    expect(res.status, await res.text()).toBe(200);
    await expect
      .poll(async () => (await stored(`path:/otel-probe-${tag}`)).length, { timeout: 30_000 })
      .toBe(1);
    await screenshot(page, 'a11y-02-bucket-setup-snippets');
    expect(me.errors).toEqual([]);
  });

  it('marks a partially redacted card number and labels the cookie header as a cookie', async () => {
    await page.goto(`/requests/${bucketSid}/${requestSid}`);
    await page.getByRole('heading', { level: 1 }).waitFor();
    const marks = page.getByTestId('redacted');
    await expect.poll(() => marks.allTextContents()).toContain('redacted**** **** **** 1111');
    expect(await marks.allTextContents()).toContain('redacted[REDACTED:cookie]');
    expect(await page.getByText('[REDACTED:password]').count()).toBe(0);
    await screenshot(page, 'a11y-03-request-partial-card');
    expect(me.errors).toEqual([]);
  });

  it('at 390 px a wide table shows that it scrolls and keeps its row buttons in view', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto('/settings/tokens');
      await page.getByRole('heading', { name: 'API tokens', level: 1 }).waitFor();
      const row = page.getByRole('row').filter({ hasText: 'reporting with a rather long name' });
      await row.waitFor();
      const wrap = page.locator('.table-wrap').first();
      const scrolls = await wrap.evaluate((el) => el.scrollWidth > el.clientWidth);
      const shadow = await wrap.evaluate(
        (el) => el.ownerDocument.defaultView!.getComputedStyle(el).backgroundImage,
      );
      expect(scrolls).toBe(true);
      expect(shadow).toContain('radial-gradient');
      const del = row.getByRole('button', { name: /^Delete / });
      const box = (await del.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      // Reachable without scrolling the table: a click lands on it, not on a cell above it.
      await del.click({ trial: true });
      expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')).toBe(0);
      await screenshot(page, 'a11y-04-tokens-390');
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
    expect(me.errors).toEqual([]);
  });

  it('has a skip link as the first Tab stop that moves focus to the page', async () => {
    await page.goto('/settings/account');
    await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    const focused = await page.evaluate<{ text: string; top: number }>(
      '({ text: document.activeElement.textContent, top: document.activeElement.getBoundingClientRect().top })',
    );
    expect(focused.text).toBe('Skip to content');
    expect(focused.top).toBeGreaterThanOrEqual(0);
    await screenshot(page, 'a11y-05-skip-link');
    await page.keyboard.press('Enter');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('main');
    expect(me.errors).toEqual([]);
  });

  it('lists the error workflow as an alert: never fired, then firing since its first execution', async () => {
    await page.goto('/alerts');
    await page.getByRole('heading', { name: 'Alerts', level: 1 }).waitFor();
    const alert = page.getByTestId('alert').filter({ hasText: 'Checkout errors' });
    await expect.poll(() => alert.getByTestId('alert-state').textContent()).toBe('Resolved: never fired');
    await ingest([rec('/checkout', 503, new Date())]);
    await expect
      .poll(() => alert.getByTestId('alert-state').textContent(), { timeout: 60_000, interval: 2000 })
      .toMatch(/^Firing since /);
    await page.reload();
    await alert.getByRole('row').nth(1).waitFor();
    expect(await alert.getByRole('row').nth(1).textContent()).toContain('/checkout');
    await screenshot(page, 'a11y-06-alerts-1440');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'a11y-07-alerts-390');
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')).toBe(0);
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(me.errors).toEqual([]);
  });

  it('counts a single error as "1 error" on the overview', async () => {
    // The one 503 of the alert above is the only error of the last 24 hours.
    await page.goto('/overview');
    const sub = page.getByTestId('tile-sub-Error rate');
    await expect.poll(() => sub.textContent(), { timeout: 30_000 }).toBe('1 error');
    expect(me.errors).toEqual([]);
  });

  it('axe finds no serious or critical violation on any page, light or dark; screenshots of each at 1440 px (and 390 px, light)', async () => {
    const wfBase = `/settings/workflows/${bucketSid}/${ENV}/${workflowSid}`;
    const pages: [string, string][] = [
      ['/overview', 'Overview'],
      ['/endpoints', 'Endpoints'],
      [`/endpoints/detail?endpoint=${encodeURIComponent('/orders')}`, '/orders'],
      ['/consumers', 'Consumers'],
      ['/errors', 'Errors'],
      ['/stream', 'Stream'],
      [`/requests/${bucketSid}/${requestSid}`, ''],
      ['/events', 'Events'],
      ['/alerts', 'Alerts'],
      ['/releases', 'Releases'],
      [`/releases/${releaseSid}`, 'v7'],
      ['/slos', 'SLOs'],
      [`/slos/${sloSid}`, 'Shop availability'],
      ['/settings/buckets', 'Buckets'],
      [`/settings/buckets/${bucketSid}`, `Shop ${tag}`],
      ['/settings/exclusions', 'Exclusions'],
      ['/settings/redactions', 'Redactions'],
      ['/settings/members', 'Members'],
      ['/settings/tokens', 'API tokens'],
      ['/settings/mcp-tokens', 'MCP tokens'],
      ['/settings/workflows', 'Workflows'],
      ['/settings/workflows/new', ''],
      [wfBase, ''],
      [`${wfBase}/executions`, ''],
      ['/settings/account', 'Account'],
    ];
    // Every page in the navigation is among them.
    await page.goto('/overview');
    const links = page.getByRole('navigation', { name: 'Main' }).getByRole('link');
    await links.first().waitFor();
    const nav: string[] = [];
    for (const l of await links.all())
      nav.push(new URL((await l.getAttribute('href'))!, env.apiUrl).pathname);
    expect(nav.length).toBeGreaterThan(10);
    for (const p of nav) expect(pages.map(([x]) => x.split('?')[0])).toContain(p);

    const found: string[] = [];
    const wide: string[] = [];
    // Every page in the light and in the dark theme (the system setting, which the dashboard
    // follows): the dark colours have contrast rules of their own to meet.
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      for (const [path, heading] of pages) {
        const t0 = Date.now();
        await page.goto(path);
        await page
          .getByRole('heading', { level: 1, ...(heading ? { name: heading } : {}) })
          .first()
          .waitFor();
        // Panels still loading are not what a person reads: wait until none is, nor any dimmed
        // over the previous scope's figures while the new ones load (aria-busy; their text is
        // below contrast on purpose until then).
        await expect.poll(() => page.locator('.state-loading').count(), { timeout: 20_000 }).toBe(0);
        await expect
          .poll(() => page.locator('.tiles[aria-busy="true"], .panel[aria-busy="true"]').count(), {
            timeout: 20_000,
          })
          .toBe(0);
        if (path === wfBase) await page.getByRole('list', { name: /Template variables/ }).waitFor();
        // The page is drawn in the theme under test.
        const luminance = await backgroundLuminance(page);
        if (colorScheme === 'dark') expect(luminance).toBeLessThan(0.1);
        else expect(luminance).toBeGreaterThan(0.8);
        // The theme changes colours only (CSS for the system setting; the DOM is the same): the
        // light pass runs every rule, the dark pass the rules that depend on colour.
        const axe = new AxeBuilder({ page });
        if (colorScheme === 'dark') axe.withRules(COLOUR_RULES);
        const result = await axe.analyze();
        for (const v of result.violations) {
          if (v.impact !== 'serious' && v.impact !== 'critical') continue;
          found.push(
            `${colorScheme} ${path}: ${v.id} (${v.impact}) at ${v.nodes.map((n) => n.target.join(' ')).join(' | ')}`,
          );
        }
        console.log(
          `axe ${colorScheme} ${path}: ${Date.now() - t0} ms, ${result.violations.length} violation(s) of any impact`,
        );
        // A screenshot at 1440 and at 390 px, for a person to look at; at 390 px the page itself
        // never scrolls sideways (a wide table scrolls inside its own frame).
        const name = shotName(path, {
          [bucketSid]: 'bucket',
          [workflowSid]: 'workflow',
          [requestSid]: 'request',
          [releaseSid]: 'release',
          [sloSid]: 'slo',
        });
        await screenshot(page, `walk-${name}-1440-${colorScheme}`);
        // The layout is the theme's too: 390 px is looked at and measured in the light theme.
        if (colorScheme === 'dark') continue;
        await page.setViewportSize({ width: 390, height: 844 });
        try {
          await screenshot(page, `walk-${name}-390-${colorScheme}`);
          const overflow = await page.evaluate<number>(
            'document.documentElement.scrollWidth - window.innerWidth',
          );
          if (overflow > 0) wide.push(`${colorScheme} ${path}: ${overflow} px wider than 390`);
        } finally {
          await page.setViewportSize({ width: 1440, height: 900 });
        }
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    // Signed out: the sign-in page, in a browser of its own (a second context of this Chromium
    // would share the session's cookies).
    const other = await launchBrowser();
    try {
      const out = await openPage(other, env.apiUrl, { width: 1440, height: 900 });
      for (const colorScheme of ['light', 'dark'] as const) {
        await out.page.emulateMedia({ colorScheme });
        await out.page.goto('/signin');
        await out.page.getByLabel('Email').waitFor();
        for (const v of (await new AxeBuilder({ page: out.page }).analyze()).violations) {
          if (v.impact === 'serious' || v.impact === 'critical')
            found.push(`${colorScheme} /signin: ${v.id} (${v.impact})`);
        }
        await screenshot(out.page, `walk-signin-1440-${colorScheme}`);
        await out.page.setViewportSize({ width: 390, height: 844 });
        await screenshot(out.page, `walk-signin-390-${colorScheme}`);
        await out.page.setViewportSize({ width: 1440, height: 900 });
      }
    } finally {
      await other.close();
    }
    expect(found).toEqual([]);
    expect(wide).toEqual([]);
    expect(me.errors).toEqual([]);
  }, 600_000);

  it("draws the last complete hour's response time as a dot when only the hour in progress follows it", async () => {
    // A bucket of its own: ten calls early in the previous hour and one in the hour in progress,
    // so the previous hour's value has the bucket still filling up as its only neighbour (its one
    // segment lies inside the faded band, a few pixels wide on a 24-hour range).
    const b = await apiCall('POST', `/v1/accounts/${accountSid}/buckets`, { name: `Lone ${tag}` });
    expect(b.status).toBe(201);
    const lone = b.json.sid as string;
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const records = [
      ...Array.from({ length: 10 }, (_, i) =>
        rec('/lone', 200, new Date(hour - 3_600_000 + 60_000 + i * 1000)),
      ),
      rec('/lone', 200, new Date(Math.max(hour, Date.now() - 5000))),
    ];
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${lone}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    await expect
      .poll(
        async () => {
          const r = await apiCall('GET', `/v1/accounts/${accountSid}/buckets/${lone}/requests?limit=100`);
          return (r.json.records as unknown[] | undefined)?.length;
        },
        { timeout: 60_000 },
      )
      .toBe(11);
    await page.goto(`/overview?bucket=${lone}&range=24h`);
    const chart = page.getByTestId('chart-Response time');
    await chart.locator('canvas').first().waitFor();
    // Pixels of the canvas in the p50 series' colour (#2563eb), at full opacity: the dot drawn
    // over the faded band (the segment under the band is blended with the panel's colour).
    const pixels = () =>
      page.evaluate<number>(`(() => {
        const c = document.querySelector('[data-testid="chart-Response time"] canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4)
          if (d[i + 3] > 200 && Math.abs(d[i] - 0x25) + Math.abs(d[i + 1] - 0x63) + Math.abs(d[i + 2] - 0xeb) < 12) n++;
        return n;
      })()`);
    await expect.poll(pixels, { timeout: 20_000 }).toBeGreaterThan(10);
    await screenshot(page, 'a11y-08-overview-last-hour-dot');
    expect(me.errors).toEqual([]);
  });
});
