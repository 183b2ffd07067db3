import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  csrfToken,
  launchBrowser,
  openPage,
  screenshot,
  type OpenedPage,
  signIn,
} from '../helpers/browser.js';

/**
 * Part 1 of the dashboard journey in real Chromium against the real stack (fresh database):
 * first run, traffic through the ingest listener, overview charts, stream with live tail, request
 * detail with a redacted header, an event marker, saved stream views, members and a user-role
 * session, and the session's guards (wrong password, signed-out cookie, CSRF header).
 * Every step waits on the page or polls the API; nothing sleeps a fixed time.
 */
const env = inject('browserEnv');

const OWNER = { name: 'Ada Owner', email: 'ada@example.com', password: 'correct horse battery 1' };
const INVITEE = { email: 'bob@example.com', password: 'another long passphrase 2' };

interface Rec {
  sid: string;
  createdAt: string;
  request: { path?: string | null; headers?: Record<string, unknown> | null };
  response?: { statusCode?: number | null } | null;
}

describe('dashboard journey (part 1)', () => {
  let browser: Browser;
  /** Other people (the invitee, a second sign-in) get browsers of their own: see the NOTE below. */
  const others: Browser[] = [];
  async function otherPerson(): Promise<OpenedPage> {
    const b = await launchBrowser();
    others.push(b);
    return openPage(b, env.apiUrl);
  }
  let main: OpenedPage;
  let page: Page;
  let invitee: OpenedPage | undefined;
  const otherErrors: string[] = [];

  /**
   * Chromium reports every refused fetch as a console error ("Failed to load resource: ... status
   * of 400"). A step that provokes one on purpose takes exactly those out of the collected errors.
   */
  function dropExpected(errors: string[], since: number, status: number): void {
    const mine = (e: string) => e.includes(`status of ${status}`);
    expect(errors.slice(since).some(mine)).toBe(true);
    const rest = errors.slice(since).filter((e) => !mine(e));
    errors.splice(since, errors.length - since, ...rest);
  }
  let accountSid = '';
  let bucketSid = '';
  let token = '';
  let redactedSid = '';

  /** A cookie-authenticated API call from the page's context, with the CSRF header for writes. */
  async function call(
    ctx: BrowserContext,
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
    opts: { csrf?: boolean } = {},
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (method !== 'GET' && opts.csrf !== false) headers['x-csrf-token'] = await csrfToken(ctx);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await ctx.request.fetch(env.apiUrl + path, {
      method,
      headers,
      data: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status(), json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  }

  async function ingest(records: unknown[]): Promise<void> {
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    const body = (await res.json()) as { accepted: number };
    expect(body.accepted).toBe(records.length);
  }

  async function listRequests(q: string): Promise<Rec[]> {
    const r = await call(
      main.context,
      'GET',
      `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests?limit=100&q=${encodeURIComponent(q)}`,
    );
    expect(r.status).toBe(200);
    return r.json.records as Rec[];
  }

  const record = (path: string, status: number, extra: Record<string, unknown> = {}) => ({
    request: { method: status >= 500 ? 'POST' : 'GET', path, host: 'api.example.com', headers: {} },
    response: { statusCode: status, body: { ok: status < 400, items: [1, 2, 3] } },
    timings: { duration: 20 + status / 10, phases: { dns: 2, tcp: 3, tls: 5, wait: 30, download: 4 } },
    ...extra,
  });

  // NOTE: each person gets a Chromium process of their own: with @sparticuz/chromium's
  // single-process flags, a second context in one browser did not keep its own cookies, and
  // closing one took the whole browser down.
  beforeAll(async () => {
    browser = await launchBrowser();
    main = await openPage(browser, env.apiUrl);
    page = main.page;
  });
  afterAll(async () => {
    for (const b of others) await b.close();
    await browser?.close();
  });

  it('creates the first account on the first-run page and lands signed in', async () => {
    await page.goto('/');
    await page.getByLabel('Your name').waitFor();
    await screenshot(page, '01-first-run');
    await page.getByLabel('Your name').fill(OWNER.name);
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/overview');
    const session = await call(main.context, 'GET', '/v1/authentication/session');
    expect(session.status).toBe(200);
    expect(session.json.role).toBe('administrator');
    accountSid = session.json.accountSid as string;
    expect(accountSid).toMatch(/^acc_/);
    await screenshot(page, '02-overview-empty');
  });

  it('creates a bucket, an ingest token and a redaction rule with the session', async () => {
    const bucket = await call(main.context, 'POST', `/v1/accounts/${accountSid}/buckets`, {
      name: 'Shop API',
    });
    expect(bucket.status, JSON.stringify(bucket.json)).toBe(201);
    bucketSid = bucket.json.sid as string;
    const tok = await call(main.context, 'POST', `/v1/accounts/${accountSid}/apiTokens`, {
      name: 'ingest',
      scopes: ['requests:write'],
    });
    expect(tok.status, JSON.stringify(tok.json)).toBe(201);
    token = tok.json.token as string;
    expect(token).toMatch(/^at_live_/);
    const rule = await call(main.context, 'POST', `/v1/accounts/${accountSid}/redactions`, {
      name: 'customer reference header',
      fieldPath: '$.request.headers.x-customer-ref',
      redactionType: 'replace',
      replacementValue: '[REDACTED]',
    });
    expect(rule.status, JSON.stringify(rule.json)).toBe(201);
  });

  it('stores sent traffic, with the Authorization header redacted', async () => {
    await ingest([
      record('/orders', 200),
      record('/orders/17', 200),
      record('/orders', 201),
      record('/users/42', 404),
      record('/checkout', 500),
      record('/checkout', 503),
    ]);
    // The rule reaches the processor within seconds (NOTIFY); a record sent before that is stored
    // unredacted, so records are sent until one arrives redacted.
    let n = 0;
    await expect
      .poll(
        async () => {
          n += 1;
          await ingest([
            record(`/secure/${n}`, 200, {
              request: {
                method: 'GET',
                path: `/secure/${n}`,
                headers: {
                  Authorization: 'Bearer s3cret-token-value',
                  'X-Customer-Ref': 'cust-8812-private',
                  accept: 'application/json',
                },
              },
            }),
          ]);
          const rows = await listRequests('path:/secure/*');
          const hit = rows.find((r) => JSON.stringify(r.request.headers ?? {}).includes('[REDACTED]'));
          if (hit) redactedSid = hit.sid;
          return Boolean(hit);
        },
        { timeout: 60_000, interval: 1_000 },
      )
      .toBe(true);
    const stored = await listRequests('path:/secure/*');
    const hit = stored.find((r) => r.sid === redactedSid)!;
    // The field rule added above, and the recommended redactions the new account started with.
    expect(JSON.stringify(hit.request.headers)).not.toContain('cust-8812-private');
    expect(JSON.stringify(hit.request.headers)).not.toContain('s3cret');
    await expect.poll(async () => (await listRequests('status:>=400')).length, { timeout: 30_000 }).toBe(3);
  });

  it('shows the traffic on the overview charts at 1280x720', async () => {
    await page.goto(`/overview?bucket=${bucketSid}&range=1h`);
    const tile = page.getByTestId('tile-Requests');
    await tile.waitFor();
    await expect
      .poll(async () => Number(((await tile.textContent()) ?? '').replace(/[^0-9]/g, '') || '0'), {
        timeout: 60_000,
        interval: 1_000,
      })
      .toBeGreaterThan(0);
    await page.getByTestId('chart-Throughput').locator('canvas').first().waitFor();
    // Throughput, response time and error rate: three charts once their panels loaded.
    await expect
      .poll(() => page.locator('.uplot canvas').count(), { timeout: 20_000 })
      .toBeGreaterThanOrEqual(3);
    await screenshot(page, '10-overview');
  });

  it("filters endpoints by method and opens one endpoint's own charts", async () => {
    await page.goto(`/endpoints?bucket=${bucketSid}&range=1h`);
    const rows = page.locator('table tbody tr');
    await expect.poll(() => rows.count(), { timeout: 20_000 }).toBeGreaterThan(1);
    const all = await rows.count();
    await page.getByLabel('Method').selectOption('POST');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBeLessThan(all);
    await page.locator('table tbody tr a').first().click();
    await page.getByRole('heading', { level: 1 }).filter({ hasText: 'POST' }).waitFor();
    await expect.poll(() => page.locator('.uplot canvas').count(), { timeout: 20_000 }).toBe(2);
    await screenshot(page, '14-endpoint');
    await page.goto(`/overview?bucket=${bucketSid}&range=1h`);
    await page.getByTestId('chart-Throughput').locator('.u-over').waitFor();
  });

  it('adds an event marker by clicking the throughput chart', async () => {
    const plot = page.getByTestId('chart-Throughput').locator('.u-over');
    const box = (await plot.boundingBox())!;
    await plot.click({ position: { x: box.width * 0.7, y: box.height / 2 } });
    await screenshot(page, '12-overview-chart-clicked');
    const dialog = page.locator('dialog[open]');
    await dialog.getByRole('heading', { name: 'Add an event marker' }).waitFor();
    await dialog.getByLabel('Title').fill('Deploy 1.2.3');
    await screenshot(page, '12-event-dialog');
    await dialog.getByRole('button', { name: 'Add marker' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page
      .getByRole('button', { name: /Deploy 1\.2\.3/ })
      .first()
      .waitFor();
    expect(await page.getByTestId('event-marker').count()).toBeGreaterThanOrEqual(1);
    await screenshot(page, '13-overview-marker');
  });

  it('lists the requests in the stream and tails new ones live', async () => {
    await page.goto(`/stream?bucket=${bucketSid}`);
    const table = page.getByRole('region', { name: 'Requests' });
    await table.getByRole('link', { name: '/checkout' }).first().waitFor();
    await page.getByTestId('live-state').filter({ hasText: 'Live' }).waitFor({ timeout: 15_000 });
    // The desktop table keeps every column, the environment included.
    expect(await table.getByRole('columnheader', { name: 'Environment' }).isVisible()).toBe(true);
    await screenshot(page, '20-stream');
    const livePath = `/live/${Date.now()}`;
    const sent = Date.now();
    await ingest([record(livePath, 200)]);
    await table.getByRole('link', { name: livePath }).waitFor({ timeout: 20_000 });
    const took = Date.now() - sent;
    expect(took).toBeLessThan(20_000);
    // Newest first: the live row is the first row of the table.
    expect(await table.locator('tbody tr').first().textContent()).toContain(livePath);
    await screenshot(page, '21-stream-live');
  });

  it('searches the stream, shows the API message for bad criteria, and saves a view', async () => {
    const box = page.getByLabel('Search requests');
    const since = main.errors.length;
    await box.fill('colour:red');
    await box.press('Enter');
    await page
      .getByRole('alert')
      .filter({ hasText: /colour/i })
      .waitFor();
    await screenshot(page, '22-stream-bad-search');
    dropExpected(main.errors, since, 400);
    await box.fill('status:>=500');
    await box.press('Enter');
    await expect.poll(() => new URL(page.url()).searchParams.get('q')).toBe('status:>=500');
    const table = page.getByRole('region', { name: 'Requests' });
    await expect.poll(async () => table.locator('tbody tr').count(), { timeout: 15_000 }).toBe(2);
    expect(await table.locator('tbody').textContent()).not.toContain('/orders');
    await page.getByRole('button', { name: 'Save search as view' }).click();
    await screenshot(page, '23-stream-save-clicked');
    const dialog = page.locator('dialog[open]');
    await dialog.getByRole('heading', { name: 'Save search as view' }).waitFor();
    await dialog.getByLabel('Name').fill('Server errors');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => new URL(page.url()).searchParams.get('view')).toMatch(/.+/);
    await page.reload();
    const select = page.getByLabel('Saved view');
    await select.locator('option', { hasText: 'Server errors' }).waitFor({ state: 'attached' });
    expect(await select.inputValue()).toBe(new URL(page.url()).searchParams.get('view'));
    await screenshot(page, '24-stream-view');
  });

  it('shows a request with its redacted header marked', async () => {
    await page.goto(`/stream?bucket=${bucketSid}&q=${encodeURIComponent('path:/secure/*')}`);
    const table = page.getByRole('region', { name: 'Requests' });
    const row = await listRequests('path:/secure/*');
    const path = row.find((r) => r.sid === redactedSid)!.request.path!;
    await table.getByRole('link', { name: path, exact: true }).click();
    await page.waitForURL(`**/requests/${bucketSid}/${redactedSid}**`);
    const redacted = page.getByTestId('redacted').filter({ hasText: '[REDACTED]' }).first();
    await redacted.waitFor();
    expect(await redacted.textContent()).toContain('[REDACTED]');
    expect(await redacted.getAttribute('title')).toMatch(/redaction rule/i);
    expect(await page.locator('body').textContent()).not.toContain('s3cret');
    expect(await page.locator('body').textContent()).not.toContain('cust-8812-private');
    await screenshot(page, '30-request');
    const since = main.errors.length;
    await page.goto(`/requests/${bucketSid}/req_doesnotexist000000000000000`);
    await page
      .getByText(/not found/i)
      .first()
      .waitFor();
    await screenshot(page, '31-request-404');
    dropExpected(main.errors, since, 404);
  });

  it('invites a member who sets a password and cannot delete the bucket', async () => {
    await page.goto(`/settings/members?bucket=${bucketSid}`);
    await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
    await page.getByLabel('Email').fill(INVITEE.email);
    await page.getByLabel('Role').selectOption('user');
    await page.getByRole('button', { name: 'Invite' }).click();
    const link = page.getByTestId('invite-url');
    await link.waitFor();
    const inviteUrl = new URL(((await link.textContent()) ?? '').trim());
    expect(inviteUrl.pathname).toMatch(/^\/invite\//);
    await screenshot(page, '40-members-invited');

    invitee = await otherPerson();
    const p2 = invitee.page;
    await p2.goto(inviteUrl.pathname + inviteUrl.search);
    await p2.getByLabel('Password').waitFor();
    await screenshot(p2, '41-invite-accept');
    await p2.getByLabel('First name').fill('Bob');
    await p2.getByLabel('Last name').fill('Member');
    await p2.getByLabel('Password').fill(INVITEE.password);
    await p2.getByRole('button', { name: /set password|join|accept|create/i }).click();
    await p2.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    const s = await call(invitee.context, 'GET', '/v1/authentication/session');
    expect(s.status, JSON.stringify(s.json)).toBe(200);
    expect(s.json.role).toBe('user');

    // The API refuses the delete even with the CSRF header; the UI offers no member management.
    const del = await call(invitee.context, 'DELETE', `/v1/accounts/${accountSid}/buckets/${bucketSid}`);
    expect(del.status).toBe(403);
    expect((del.json.error as { message: string }).message).toBeTruthy();
    await p2.goto(`/settings/members?bucket=${bucketSid}`);
    await p2.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
    expect(await p2.getByRole('button', { name: 'Invite' }).count()).toBe(0);
    await screenshot(p2, '42-members-as-user');
    await p2.goto(`/requests/${bucketSid}/${redactedSid}?bucket=${bucketSid}`);
    await p2.getByTestId('redacted').first().waitFor();
    expect(await p2.getByRole('button', { name: 'Delete request' }).count()).toBe(0);
    await screenshot(p2, '43-request-as-user');
    const bucketStill = await call(main.context, 'GET', `/v1/accounts/${accountSid}/buckets/${bucketSid}`);
    expect(bucketStill.status).toBe(200);

    // The member can also sign in with the new password on the sign-in page.
    const third = await otherPerson();
    await signIn(third.page, INVITEE.email, INVITEE.password);
    otherErrors.push(...third.errors);
  });

  it("renders in a browser whose language Intl refuses (Chromium's own en-US@posix)", async () => {
    const b = await launchBrowser();
    others.push(b);
    const posix = await openPage(b, env.apiUrl, { locale: null });
    expect(await posix.page.evaluate('navigator.language')).toBeTruthy();
    await signIn(posix.page, OWNER.email, OWNER.password);
    // The overview's charts are drawn by uPlot, which formats with navigator.language at load.
    await posix.page.locator('.uplot').first().waitFor();
    expect(await posix.page.evaluate('navigator.language')).toBe('en-US');
    expect(posix.errors).toEqual([]);
  });

  it('refuses a wrong password, a signed-out cookie and a write without the CSRF header', async () => {
    const api = await fetch(env.apiUrl + '/v1/authentication/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: OWNER.email, password: 'wrong password here' }),
    });
    expect(api.status).toBe(401);
    const message = ((await api.json()) as { error: { message: string } }).error.message;
    expect(message).toBeTruthy();
    const wrong = await otherPerson();
    await wrong.page.goto('/signin');
    await wrong.page.getByLabel('Email').fill(OWNER.email);
    await wrong.page.getByLabel('Password').fill('wrong password here');
    await wrong.page.getByRole('button', { name: 'Sign in' }).click();
    await wrong.page.getByRole('alert').filter({ hasText: message }).waitFor();
    await screenshot(wrong.page, '50-signin-wrong-password');
    // The browser reports the refused sign-in (401) as a failed resource load; nothing else.
    dropExpected(wrong.errors, 0, 401);
    expect(wrong.errors).toEqual([]);

    // A cookie write without X-CSRF-Token is refused.
    const noCsrf = await call(
      main.context,
      'POST',
      `/v1/accounts/${accountSid}/buckets`,
      { name: 'x' },
      { csrf: false },
    );
    expect(noCsrf.status).toBe(403);

    // Sign out in the invitee's session; its old cookie no longer works.
    const ctx = invitee!.context;
    const cookieHeader = (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const before = await fetch(env.apiUrl + '/v1/authentication/session', {
      headers: { cookie: cookieHeader },
    });
    expect(before.status).toBe(200);
    // A cookie-only sign-out (what an `<img>` on another page of the host sends) is refused.
    const forged = await call(ctx, 'GET', '/v1/authentication/signout');
    expect(forged.status).toBe(403);
    // The dashboard's own "Sign out" sends the CSRF token and ends the session.
    await invitee!.page.getByRole('button', { name: 'Sign out' }).click();
    await invitee!.page.waitForURL(/\/signin/);
    const after = await fetch(env.apiUrl + '/v1/authentication/session', {
      headers: { cookie: cookieHeader },
    });
    expect(after.status).toBe(401);
  });

  it('keeps the overview readable 390 px wide', async () => {
    await page.goto(`/overview?bucket=${bucketSid}&range=1h`);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId('tile-Requests').waitFor();
    await page.getByTestId('chart-Throughput').locator('canvas').first().waitFor();
    await screenshot(page, '11-overview-390');
    // A string: this file is type-checked without the DOM library.
    const overflow = () => page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(await overflow()).toBeLessThanOrEqual(1);
    // The settings tables scroll inside their card; the page itself never scrolls sideways.
    for (const [path, shot] of [
      ['/settings/buckets', '15-buckets-390'],
      ['/settings/members', '16-members-390'],
    ] as const) {
      await page.goto(path);
      await page.locator('table.table').first().waitFor();
      await screenshot(page, shot);
      expect(await overflow(), path).toBeLessThanOrEqual(1);
    }
    // The stream at phone width: time, method, path, status and duration in view without scrolling
    // the table sideways; the environment column gives way.
    await page.goto(`/stream?bucket=${bucketSid}`);
    const table = page.getByRole('region', { name: 'Requests' });
    await table.getByRole('link', { name: '/checkout' }).first().waitFor();
    await screenshot(page, '25-stream-390');
    expect(await overflow()).toBeLessThanOrEqual(1);
    const sideways =
      "(() => { const w = document.querySelector('.stream-panel .table-wrap'); return w.scrollWidth - w.clientWidth; })()";
    expect(await page.evaluate<number>(sideways)).toBeLessThanOrEqual(1);
    const firstRow = table.locator('tbody tr').first();
    for (const [name, cell] of [
      [/^Time/, 0],
      ['Method', 1],
      ['Path', 2],
      ['Status', 3],
      ['Duration', 4],
    ] as const) {
      for (const el of [table.getByRole('columnheader', { name }), firstRow.locator('td').nth(cell)]) {
        const box = (await el.boundingBox())!;
        expect([String(name), box.x >= 0 && box.x + box.width <= 390 && box.width > 0]).toEqual([
          String(name),
          true,
        ]);
      }
    }
    expect(await firstRow.locator('td').nth(2).getByRole('link').textContent()).toMatch(/^\//);
    expect(await table.getByRole('columnheader', { name: 'Environment' }).isVisible()).toBe(false);
    await page.setViewportSize({ width: 1280, height: 720 });
  });

  it('collected no console errors on the pages it visited', () => {
    expect(main.errors).toEqual([]);
    expect(invitee?.errors ?? []).toEqual([]);
    expect(otherErrors).toEqual([]);
  });
});
