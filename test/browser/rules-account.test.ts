import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');

/** A curl command as the page prints it, turned into a fetch (`$TAPLINE_TOKEN` = a real token). */
function parseCurl(text: string, token: string): { url: string; init: RequestInit } {
  const oneLine = text.replace(/\\\n\s*/g, ' ');
  const url = /curl -X POST (\S+)/.exec(oneLine)?.[1];
  const headers: Record<string, string> = {};
  for (const m of oneLine.matchAll(/-H (?:'([^']*)'|"([^"]*)")/g)) {
    const h = (m[1] ?? m[2] ?? '').replace('$TAPLINE_TOKEN', token);
    const i = h.indexOf(':');
    headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  const body = /-d '(.*)'\s*$/.exec(oneLine)?.[1];
  if (!url || body === undefined) throw new Error(`not a curl command I can read: ${text}`);
  return { url, init: { method: 'POST', headers, body } };
}

type Stored = { sid: string; request: { path?: string; body?: unknown } };

/**
 * Issue 13 pages 1 (SDK settings), 2 (exclusions and redactions with their preview), 5 (events) and
 * 6 (account) in real Chromium against the real stack: a bucket set up from its copied curl, an SDK
 * setting served by `/sdk`, a redaction previewed then seen applied in the stream, an exclusion
 * previewed ("would be dropped") then seen dropping traffic, event filters and bulk delete, and the
 * account page. Every step waits on the page or polls.
 */
describe('dashboard: SDK settings, rules with previews, events, account', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `rules-${tag}@example.test`;
  const password = 'rules password 1';
  const bucketName = `Rules ${tag}`;
  let accountSid = '';
  let adminToken = '';
  let bucketSid = '';

  async function apiCall(method: string, path: string, body?: unknown, token = adminToken) {
    const res = await fetch(`${env.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  }

  async function send(records: unknown[]): Promise<void> {
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    await res.arrayBuffer();
    expect(res.status).toBe(202);
  }

  async function stored(): Promise<Stored[]> {
    const r = await apiCall('GET', `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests?limit=100`);
    return (r.json.records ?? []) as Stored[];
  }

  /** Drops the console errors of an expected failed request (Chromium logs every 4xx). */
  function dropExpected(since: number, status: number): void {
    const mine = (e: string) => e.includes(`status of ${status}`);
    expect(me.errors.slice(since).some(mine)).toBe(true);
    const rest = me.errors.slice(since).filter((e) => !mine(e));
    me.errors.splice(since, me.errors.length - since, ...rest);
  }

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      // The walk starts where an account made before the recommended redactions stands: no rule
      // yet (a new account's defaults are in rules-shape-a.test.ts).
      const acc = await createAccount(pool, {
        name: `Rules ${tag}`,
        email,
        password,
        plan: 'pro',
        recommendedRedactions: false,
      });
      accountSid = acc.accountSid;
      adminToken = acc.apiToken;
    } finally {
      await pool.end();
    }
    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl);
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('creates a bucket whose copied curl turns its setup page connected without reload', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Buckets' }).click();
    await page.getByText('No bucket yet').waitFor();
    await page.getByLabel('Name').fill(bucketName);
    await page.getByRole('button', { name: 'Create bucket' }).click();
    await page.getByRole('link', { name: bucketName }).click();
    await page.getByRole('heading', { name: bucketName, level: 1 }).waitFor();
    bucketSid = (await page.getByTestId('bucket-sid').textContent()) ?? '';
    expect(bucketSid).toMatch(/^bkt_/);
    const status = page.getByTestId('bucket-connection');
    await expect.poll(() => status.textContent()).toContain('Waiting for the first request');
    await page.getByRole('heading', { name: 'SDK settings' }).waitFor();
    await page.getByText('All defaults: never changed.').waitFor();
    await screenshot(page, '40-bucket-setup-waiting');
    await page.evaluate('window.noReload = true');

    const curl = parseCurl((await page.getByTestId('ingest-curl').textContent()) ?? '', adminToken);
    expect(curl.url).toBe(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`);
    const res = await fetch(curl.url, curl.init);
    expect(res.status).toBe(202);
    await expect.poll(() => status.textContent(), { timeout: 20_000 }).toContain('Connected');
    expect(await page.evaluate<boolean>('window.noReload === true')).toBe(true);
    await screenshot(page, '41-bucket-setup-connected');
    expect(me.errors).toEqual([]);
  });

  it('edits SDK settings on the setup page; /sdk serves them to an ingest-only token', async () => {
    const rate = page.getByLabel('Sample rate');
    await rate.fill('2');
    await page.getByRole('button', { name: 'Save SDK settings' }).click();
    await page.getByText('must be from 0 to 1').waitFor();
    await rate.fill('0.5');
    await page.getByRole('checkbox', { name: 'Capture response bodies' }).uncheck();
    await page.getByRole('button', { name: 'Save SDK settings' }).click();
    await page.getByText('Saved. SDKs receive the new settings at their next refresh.').waitFor();
    await page.getByText(/^Last changed /).waitFor();
    await screenshot(page, '42-bucket-sdk-settings');

    const created = await apiCall('POST', `/v1/accounts/${accountSid}/apiTokens`, {
      name: 'sdk',
      scopes: ['requests:write'],
    });
    expect(created.status).toBe(201);
    const token = String(created.json.token);
    for (const base of [env.apiUrl, env.ingestUrl]) {
      const res = await fetch(`${base}/v1/buckets/${bucketSid}/sdk?redactAt=client&clientId=node`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect([base, res.status]).toEqual([base, 200]);
      const doc = (await res.json()) as { settings: Record<string, unknown> };
      expect(doc.settings).toMatchObject({
        sampleRate: 0.5,
        captureResponseBody: false,
        captureRequestBody: true,
      });
    }
    // A reload shows the stored values.
    await page.reload();
    await expect.poll(() => page.getByLabel('Sample rate').inputValue()).toBe('0.5');
    expect(await page.getByRole('checkbox', { name: 'Capture response bodies' }).isChecked()).toBe(false);
    expect(me.errors).toEqual([]);
  });

  it('creates a redaction whose preview shows the masked field; the stream shows it redacted', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Redactions' }).click();
    await page.getByRole('heading', { name: 'Redactions', level: 1 }).waitFor();
    await page.getByText('No redaction rules').waitFor();
    await page.getByRole('button', { name: 'New redaction' }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('rule')).toBe('new');
    // A draft previews without a name (no name error). A path the API's parser refuses: its
    // message shows under the field.
    await page.getByLabel('Field path').fill('$.request.method');
    const since = me.errors.length;
    await page.getByRole('button', { name: 'Run preview' }).click();
    const pathError = page.locator('#redaction-field-error');
    await pathError.waitFor();
    expect(await pathError.textContent()).toMatch(/request/);
    expect(await page.locator('#redaction-name-error').count()).toBe(0);
    dropExpected(since, 400);

    // Saving checks every field locally: nothing is sent while the name is missing.
    await page.getByRole('button', { name: 'Create redaction' }).click();
    await page.locator('#redaction-name-error').getByText('is required').waitFor();
    expect(me.errors.length).toBe(since);

    await page.getByLabel('Field path').fill('$..password');
    await page.getByRole('button', { name: 'Run preview' }).click();
    const result = page.getByTestId('preview-result');
    await result.getByText('1 field redacted.').waitFor();
    const changes = result.getByRole('table', { name: 'Changed fields' });
    await changes.getByRole('cell', { name: 'request.body.password' }).waitFor();
    await changes.getByRole('cell', { name: '******* *****' }).waitFor();
    // The redacted record, with the changed field highlighted.
    const mark = result.getByTestId('preview-record').locator('mark.changed');
    expect(await mark.count()).toBe(1);
    expect(await mark.textContent()).toContain('"password": "******* *****"');
    await screenshot(page, '43-redaction-preview');
    // Another action makes the shown result outdated until the preview runs again.
    await page.getByLabel('Action', { exact: true }).selectOption('remove');
    await result.getByText('The rule has changed since this preview: run it again.').waitFor();
    await page.getByRole('button', { name: 'Run preview' }).click();
    await changes.getByRole('cell', { name: '(removed)' }).waitFor();
    expect(await result.getByText('The rule has changed since this preview').count()).toBe(0);
    await page.getByLabel('Action', { exact: true }).selectOption('mask');
    await page.getByLabel('Name').fill('Passwords');

    await page.getByRole('button', { name: 'Create redaction' }).click();
    await page.getByText('“Passwords” is saved and active.').waitFor();
    await page.getByRole('cell', { name: '$..password' }).waitFor();
    expect(new URL(page.url()).searchParams.get('rule')).toBeNull();
    await screenshot(page, '44-redactions');

    // The rule reaches the processor by NOTIFY within seconds: send until a record arrives redacted.
    let n = 0;
    let redactedPath = '';
    await expect
      .poll(
        async () => {
          n += 1;
          await send([
            {
              request: {
                method: 'POST',
                path: `/signup/${n}`,
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ email: 'ada@example.com', password: 'hunter2 secret' }),
              },
              response: { statusCode: 201 },
            },
          ]);
          const hit = (await stored()).find(
            (r) =>
              r.request.path?.startsWith('/signup/') && !JSON.stringify(r.request.body).includes('hunter2'),
          );
          redactedPath = hit?.request.path ?? '';
          return Boolean(hit);
        },
        { timeout: 60_000, interval: 1_000 },
      )
      .toBe(true);

    await page.goto(`/stream?bucket=${bucketSid}`);
    const table = page.getByRole('region', { name: 'Requests' });
    await table.getByRole('link', { name: redactedPath, exact: true }).click();
    const redacted = page.getByTestId('redacted').first();
    await redacted.waitFor();
    expect(await redacted.textContent()).toContain('******* ******');
    expect(await page.locator('body').textContent()).not.toContain('hunter2');
    await screenshot(page, '45-stream-request-redacted');
    expect(me.errors).toEqual([]);
  });

  it('previews an exclusion ("would be dropped"), then matching records are not stored', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Exclusions' }).click();
    await page.getByRole('heading', { name: 'Exclusions', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New exclusion' }).click();
    await page.getByLabel('Name').fill('Health checks');
    await page.getByLabel('Method').selectOption('GET');
    await page.getByLabel('Path pattern').fill('health*');
    await page.getByRole('button', { name: 'Create exclusion' }).click();
    await page.locator('#exclusion-path-error').getByText('must start with / or *').waitFor();
    await page.getByLabel('Path pattern').fill('/health*');

    // The example record is a GET /health?probe=1: dropped.
    await page.getByRole('button', { name: 'Run preview' }).click();
    const result = page.getByTestId('preview-result');
    await result.getByText('Would be dropped: never stored.').waitFor();
    await result.getByText('/health', { exact: true }).waitFor();
    await screenshot(page, '46-exclusion-preview-dropped');

    // A stored request (the redacted signup) as the sample: kept. The pick is in the URL.
    await page.getByRole('radio', { name: 'Pick a stored request' }).check();
    await page.getByLabel('Bucket of the request').selectOption(bucketSid);
    const pick = page.getByLabel('Stored request', { exact: true });
    await pick.locator('option', { hasText: '/signup/' }).first().waitFor({ state: 'attached' });
    const value = await pick.locator('option', { hasText: '/signup/' }).first().getAttribute('value');
    await pick.selectOption(value!);
    await expect.poll(() => new URL(page.url()).searchParams.get('sampleRequest')).toBe(value);
    await page.getByRole('button', { name: 'Run preview' }).click();
    await result.getByText('Would be stored: the rule does not match.').waitFor();
    await screenshot(page, '47-exclusion-preview-stored');

    await page.getByRole('button', { name: 'Create exclusion' }).click();
    await page.getByText('“Health checks” is saved and active.').waitFor();
    await page.getByRole('cell', { name: '/health*' }).waitFor();
    await screenshot(page, '48-exclusions');

    // Sent in pairs until the rule is in force: a /kept record stored without its /health twin.
    let n = 0;
    await expect
      .poll(
        async () => {
          n += 1;
          await send([
            { request: { method: 'GET', path: `/health/${n}` }, response: { statusCode: 200 } },
            { request: { method: 'GET', path: `/kept/${n}` }, response: { statusCode: 200 } },
          ]);
          const paths = new Set((await stored()).map((r) => r.request.path));
          for (let i = 1; i <= n; i++) if (paths.has(`/kept/${i}`) && !paths.has(`/health/${i}`)) return true;
          return false;
        },
        { timeout: 60_000, interval: 1_000 },
      )
      .toBe(true);
    // From now on: three matching records dropped, the non-matching one (sent after them) stored.
    await send([
      { request: { method: 'GET', path: '/health/live' }, response: { statusCode: 200 } },
      { request: { method: 'GET', path: '/health/ready?x=1' }, response: { statusCode: 503 } },
      { request: { method: 'GET', path: '/healthz' } },
      { request: { method: 'POST', path: '/health/report' }, response: { statusCode: 200 } },
    ]);
    await expect
      .poll(async () => (await stored()).some((r) => r.request.path === '/health/report'), {
        timeout: 30_000,
      })
      .toBe(true);
    const paths = (await stored()).map((r) => r.request.path);
    expect(paths).not.toContain('/health/live');
    expect(paths).not.toContain('/health/ready?x=1');
    expect(paths).not.toContain('/healthz');

    // Disable, then delete after the confirmation says what it does.
    // The box follows the saved state: it flips once the API has stored the change.
    const active = page.getByRole('checkbox', { name: 'Active: Health checks' });
    await active.click();
    await page.getByText('“Health checks” is inactive.').waitFor();
    await expect.poll(() => active.isChecked()).toBe(false);
    await page.getByRole('button', { name: 'Delete Health checks' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('are stored again from now on').waitFor();
    await dialog.getByRole('button', { name: 'Delete exclusion' }).click();
    await page.getByText('No exclusion rules').waitFor();
    expect(me.errors).toEqual([]);
  });

  it('filters event markers by type and source in the URL, then bulk-deletes two after saying how many', async () => {
    const startedAt = new Date(Date.now() - 10 * 60_000).toISOString();
    const sids: string[] = [];
    for (const [type, name, source] of [
      ['deployment', 'deploy one', 'ci'],
      ['deployment', 'deploy two', 'ci'],
      ['deployment', 'keep me', 'dashboard'],
      ['incident', 'outage', 'pager'],
    ]) {
      const r = await apiCall('POST', `/v1/accounts/${accountSid}/events`, { type, name, startedAt, source });
      expect(r.status).toBe(201);
      sids.push(String(r.json.sid));
    }
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Events' }).click();
    await page.getByRole('cell', { name: 'keep me', exact: true }).waitFor();

    await page.getByLabel('Type').selectOption('incident');
    await expect.poll(() => new URL(page.url()).searchParams.get('type')).toBe('incident');
    await page.getByRole('cell', { name: 'keep me', exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: 'outage', exact: true }).waitFor();
    await page.getByLabel('Type').selectOption('');
    await page.getByLabel('Source').fill('ci');
    await expect.poll(() => new URL(page.url()).searchParams.get('source')).toBe('ci');
    await page.reload();
    await page.getByRole('cell', { name: 'deploy one', exact: true }).waitFor();
    expect(await page.getByLabel('Source').inputValue()).toBe('ci');
    expect(await page.getByRole('cell', { name: 'keep me', exact: true }).count()).toBe(0);
    await screenshot(page, '49-events-filtered');
    await page.getByLabel('Source').fill('');
    await page.getByRole('cell', { name: 'keep me', exact: true }).waitFor();

    await page.getByRole('checkbox', { name: 'Select deploy one' }).check();
    await page.getByRole('checkbox', { name: 'Select deploy two' }).check();
    await page.getByRole('button', { name: 'Delete selected (2)' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('heading', { name: 'Delete 2 event markers?' }).waitFor();
    await screenshot(page, '50-events-bulk-delete');
    await dialog.getByRole('button', { name: 'Delete 2 markers' }).click();
    await page.getByRole('cell', { name: 'deploy one', exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: 'keep me', exact: true }).waitFor();
    expect(await page.getByRole('cell', { name: 'deploy two', exact: true }).count()).toBe(0);
    expect((await apiCall('GET', `/v1/accounts/${accountSid}/events/${sids[0]}`)).status).toBe(404);
    expect((await apiCall('GET', `/v1/accounts/${accountSid}/events/${sids[1]}`)).status).toBe(404);
    expect((await apiCall('GET', `/v1/accounts/${accountSid}/events/${sids[2]}`)).status).toBe(200);
    expect((await apiCall('GET', `/v1/accounts/${accountSid}/events/${sids[3]}`)).status).toBe(200);
    expect(me.errors).toEqual([]);
  });

  it('shows the account: plan, rate limit use, environments seen, a link to members', async () => {
    const bucket = await apiCall('POST', `/v1/accounts/${accountSid}/buckets`, { name: `Env ${tag}` });
    const envBucket = String(bucket.json.sid);
    const sent = await fetch(`${env.ingestUrl}/v1/buckets/${envBucket}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        records: [
          {
            environmentSid: 'acct01',
            request: { method: 'GET', path: '/env' },
            response: { statusCode: 200 },
          },
        ],
      }),
    });
    expect(sent.status).toBe(202);
    await expect
      .poll(
        async () =>
          (
            (await apiCall('GET', `/v1/accounts/${accountSid}/buckets/${envBucket}/requests`)).json
              .records as unknown[]
          ).length,
        { timeout: 20_000 },
      )
      .toBe(1);

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'acct01' }).waitFor();
    await page.getByRole('heading', { name: 'Plan and API rate limit' }).waitFor();
    await page.getByText('pro', { exact: true }).waitFor();
    await page.getByText('10,000 /v1 requests per hour').waitFor();
    const meter = page.getByRole('meter');
    expect(await meter.count()).toBe(1);
    expect(Number(await meter.getAttribute('aria-valuenow'))).toBeGreaterThan(0);
    await page.getByRole('link', { name: 'Members →' }).waitFor();
    await screenshot(page, '51-account');

    const field = page.getByLabel('Account name');
    await field.fill(`Rules ${tag} renamed`);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const acc = await apiCall('GET', `/v1/accounts/${accountSid}`);
    expect(acc.json.name).toBe(`Rules ${tag} renamed`);
    expect(me.errors).toEqual([]);
  });

  it("picks the header's environment from the environments seen, and marks a linked one without traffic", async () => {
    await page.goto('/overview');
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    const select = page.getByLabel('Environment', { exact: true });
    // A list, not free text: "All environments" and the one environment this account's traffic named.
    expect(await select.evaluate((el) => el.tagName)).toBe('SELECT');
    await expect
      .poll(() => select.locator('option').allTextContents(), { timeout: 15_000 })
      .toEqual(['All environments', 'acct01']);
    // The throughput answers for the environment picked (the previous scope's stays on screen,
    // dimmed and marked busy, until they arrive): the range's and the period before it, which
    // the chart draws faintly behind, in whichever order they finish.
    const startOf = (r: Response) => Date.parse(new URL(r.url()).searchParams.get('startDate') ?? '');
    const envThroughput = new Promise<Response[]>((resolve) => {
      // The first answer of each period (a live range also reads its own again every 10 s).
      const got = new Map<number, Response>();
      const on = (r: Response) => {
        if (!r.url().includes('/metrics/shapeA/throughput') || !r.url().includes('environmentSid=acct01'))
          return;
        if (!got.has(startOf(r))) got.set(startOf(r), r);
        if (got.size < 2) return;
        page.off('response', on);
        resolve([...got.values()]);
      };
      page.on('response', on);
    });
    await select.selectOption('acct01');
    await page.waitForURL(/[?&]env=acct01/);
    const [previous, current] = (await envThroughput).sort((a, b) => startOf(a) - startOf(b));
    const count = async (r: Response) =>
      ((await r.json()) as { periods: { total: { count: number } }[] }).periods.reduce(
        (n, p) => n + p.total.count,
        0,
      );
    expect(startOf(previous!)).toBeLessThan(startOf(current!));
    expect(await count(current!)).toBe(1);
    expect(await count(previous!)).toBe(0);
    await expect.poll(() => page.locator('[aria-busy="true"]').count()).toBe(0);
    expect(await page.getByTestId('tile-Requests').textContent()).toBe('1');
    await screenshot(page, '54-env-filter');

    // A link naming an environment no traffic carries: shown as such, not silently dropped.
    await page.goto('/overview?env=zzzz99');
    // The page loads again: the environments seen come back with the account (15 s on a loaded machine).
    await expect
      .poll(() => select.locator('option').allTextContents(), { timeout: 15_000 })
      .toEqual(['All environments', 'acct01', 'zzzz99 (no traffic)']);
    expect(await select.inputValue()).toBe('zzzz99');
    await select.selectOption('');
    await expect.poll(() => new URL(page.url()).searchParams.get('env')).toBeNull();

    // At phone width the picker stays inside the window.
    await page.setViewportSize({ width: 390, height: 844 });
    const box = (await select.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(390);
    await screenshot(page, '55-env-filter-390');
    await page.setViewportSize({ width: 1280, height: 720 });
    expect(me.errors).toEqual([]);
  });

  it('keeps the rules and account pages readable at 390 px', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`/settings/redactions?rule=new`);
    await page.getByRole('heading', { name: 'New redaction' }).waitFor();
    await screenshot(page, '52-redaction-new-390');
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await page.goto('/settings/account');
    await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
    await page.getByRole('meter').waitFor();
    await screenshot(page, '53-account-390');
    expect(
      await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1280, height: 720 });
    expect(me.errors).toEqual([]);
  });
});
