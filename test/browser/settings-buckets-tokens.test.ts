import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');

/**
 * A curl command as the dashboard prints it, turned into a fetch: URL, `-H` headers, `-d` body,
 * with `$TAPLINE_TOKEN` replaced by a real token. Parsing the page's text (rather than rebuilding
 * the request) is the point: the snippet a person copies must work as shown.
 */
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

/**
 * The settings pages in real Chromium: buckets with their setup page (a copied curl turns the page
 * "Connected" without a reload), API tokens (scope presets, value shown once and copied, send with
 * it, a read refused, deactivate, delete), MCP tokens (value and client configuration shown once,
 * used on /mcp, revoke), renaming and deleting a bucket. Every step waits on the page or polls.
 */
describe('dashboard settings: buckets and tokens', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `settings-${tag}@example.test`;
  const password = 'settings password 1';
  let accountSid = '';
  let adminToken = '';
  let bucketSid = '';
  let ingestToken = '';
  const bucketName = `Payments ${tag}`;

  /** The admin token's view of the API (not the page's), to check what the page did. */
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

  async function ingest(token: string): Promise<number> {
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        records: [{ request: { method: 'GET', path: '/probe' }, response: { statusCode: 204 } }],
      }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, { name: `Settings ${tag}`, email, password, plan: 'pro' });
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

  it('creates a bucket whose setup page waits for the first request', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Buckets' }).click();
    await page.getByText('No bucket yet').waitFor();
    await page.getByLabel('Name').fill(bucketName);
    await page.getByRole('button', { name: 'Create bucket' }).click();
    await page.getByRole('link', { name: bucketName }).waitFor();
    await screenshot(page, '30-buckets');
    await page.getByRole('link', { name: bucketName }).click();
    await page.getByRole('heading', { name: bucketName, level: 1 }).waitFor();
    bucketSid = (await page.getByTestId('bucket-sid').textContent()) ?? '';
    expect(bucketSid).toMatch(/^bkt_/);
    await expect
      .poll(() => page.getByTestId('bucket-connection').textContent())
      .toContain('Waiting for the first request');
    // SDK settings as GET /v1/buckets/{b}/sdk serves them (no rules yet).
    await page.getByRole('heading', { name: 'SDK settings' }).waitFor();
    await page.getByText('on: outbound calls are captured').waitFor();
    await screenshot(page, '31-bucket-setup-waiting');
  });

  it('creates an "Ingest only" API token shown once; its copied curl turns the setup page connected without reload', async () => {
    await page.goto('/settings/tokens');
    await page.getByRole('heading', { name: 'API tokens', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Create API token' }).click();
    await page.getByLabel('Name', { exact: true }).fill('checkout ingest');
    await page.getByRole('button', { name: 'Ingest only' }).click();
    expect(await page.getByRole('checkbox', { name: 'requests:write' }).isChecked()).toBe(true);
    expect(await page.getByRole('checkbox', { name: 'requests:read' }).isChecked()).toBe(false);
    // The grid comes from the session's scopes; member management is never grantable to a token.
    expect(await page.getByRole('checkbox', { name: 'streamViews:read' }).count()).toBe(1);
    expect(await page.getByRole('checkbox', { name: 'users:read' }).count()).toBe(0);
    await screenshot(page, '32-tokens-create');
    await page.getByRole('button', { name: 'Create token' }).click();
    const value = page.getByTestId('new-token-value');
    await value.waitFor();
    const shown = ((await value.textContent()) ?? '').trim();
    expect(shown).toMatch(/^at_live_[A-Za-z0-9]{40}$/);
    await page.getByText('Copy this token now: you will not see it again.').waitFor();
    // The copy button puts exactly the value on the clipboard: that copy is the one used below.
    await me.context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.getByRole('button', { name: 'Copy token' }).click();
    await page.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    ingestToken = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(ingestToken).toBe(shown);
    const row = page.getByRole('row').filter({ hasText: 'checkout ingest' });
    await row.getByText('Ingest only').waitFor();
    await row.getByText('ingest', { exact: true }).waitFor();
    await screenshot(page, '33-tokens-created');

    // The setup page, marked so that a reload would be noticed.
    await page.goto(`/settings/buckets/${bucketSid}`);
    const status = page.getByTestId('bucket-connection');
    await expect.poll(() => status.textContent()).toContain('Waiting for the first request');
    await page.evaluate('window.noReload = true');
    const batch = parseCurl((await page.getByTestId('ingest-curl').textContent()) ?? '', ingestToken);
    expect(batch.url).toBe(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`);
    const res = await fetch(batch.url, batch.init);
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ accepted: 1, rejected: [] });
    await expect.poll(() => status.textContent(), { timeout: 20_000 }).toContain('Connected');
    expect(await page.evaluate<boolean>('window.noReload === true')).toBe(true);

    // The SDK wire-format snippet works as shown too.
    const sdk = parseCurl((await page.getByTestId('sdk-curl').textContent()) ?? '', ingestToken);
    expect(sdk.url).toBe(`${env.ingestUrl}/`);
    const sdkRes = await fetch(sdk.url, sdk.init);
    expect(sdkRes.status).toBe(202);
    await page.getByRole('link', { name: 'See its requests in the stream →' }).waitFor();
    await screenshot(page, '34-bucket-setup-connected');

    // The token sends (202) but cannot read (403).
    expect(await ingest(ingestToken)).toBe(202);
    const read = await apiCall(
      'GET',
      `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests`,
      undefined,
      ingestToken,
    );
    expect(read.status).toBe(403);
    expect(read.json).toMatchObject({
      error: { code: 'FORBIDDEN', details: { requiredScope: 'requests:read' } },
    });
  });

  it('deactivates, reactivates and deletes the API token; each takes effect on the next request', async () => {
    await page.goto('/settings/tokens');
    const row = page.getByRole('row').filter({ hasText: 'checkout ingest' });
    await row.getByRole('button', { name: 'Deactivate checkout ingest' }).click();
    await row.getByText('inactive').waitFor();
    // The ingest listener is a process of its own: its cache is cleared by NOTIFY, a moment later.
    await expect.poll(() => ingest(ingestToken)).toBe(401);
    await row.getByRole('button', { name: 'Activate checkout ingest' }).click();
    await row.getByText('active', { exact: true }).waitFor();
    await expect.poll(() => ingest(ingestToken)).toBe(202);

    await row.getByRole('button', { name: 'Delete checkout ingest' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('refused (401) from its next request').waitFor();
    await screenshot(page, '35-tokens-delete-confirm');
    await dialog.getByRole('button', { name: 'Delete token' }).click();
    await row.waitFor({ state: 'detached' });
    await expect.poll(() => ingest(ingestToken)).toBe(401);
  });

  it('creates an MCP token with its client configuration, uses it on /mcp, and revokes it', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'MCP tokens' }).click();
    await page.getByText('No MCP token yet').waitFor();
    const generic = (await page.getByTestId('mcp-config').textContent()) ?? '';
    expect(JSON.parse(generic)).toMatchObject({ mcpServers: { tapline: { url: `${env.apiUrl}/mcp` } } });
    await page.getByRole('button', { name: 'Create MCP token' }).click();
    await page.getByLabel('Name', { exact: true }).fill('assistant');
    // An environment sid the API refuses: its words at the field, not the schema's pattern, and not
    // repeated above the buttons with the API's field name.
    const errorsBefore = me.errors.length;
    await page.getByLabel('Environment sid').fill('PROD01');
    await page.getByRole('button', { name: 'Create token' }).click();
    const envError = page.locator('#mcp-environment-error');
    await expect
      .poll(() => envError.textContent())
      .toBe('must be 6 lowercase letters or digits (e.g. "prod01")');
    expect(await page.getByLabel('Environment sid').getAttribute('aria-invalid')).toBe('true');
    const form = page.locator('form').filter({ has: page.getByLabel('Environment sid') });
    expect(await form.textContent()).not.toMatch(/must match|environmentSid|\^\[/);
    expect(await form.locator('.form-error').count()).toBe(0);
    await screenshot(page, '36-mcp-tokens-bad-environment');
    // Chromium logs the refused POST (400) in the console: expected here.
    expect(me.errors.slice(errorsBefore).every((e) => e.includes('status of 400'))).toBe(true);
    me.errors.splice(errorsBefore);
    await page.getByLabel('Environment sid').fill('prod01');
    const year = new Date().getUTCFullYear() + 1;
    await page.getByLabel('Expires at the end of (optional)').fill(`${year}-06-30`);
    await page.getByRole('button', { name: 'Create token' }).click();
    const value = ((await page.getByTestId('new-token-value').textContent()) ?? '').trim();
    expect(value).toMatch(/^mcp_[A-Za-z0-9]{40}$/);
    const config = JSON.parse((await page.getByTestId('new-mcp-config').textContent()) ?? '') as {
      mcpServers: { tapline: { url: string; headers: Record<string, string> } };
    };
    expect(config.mcpServers.tapline.headers.Authorization).toBe(`Bearer ${value}`);
    // The configuration is shown once: the generic one (with `mcp_…`) returns when the new one closes.
    expect(await page.getByTestId('mcp-config').count()).toBe(0);
    const row = page.getByRole('row').filter({ hasText: 'assistant' });
    await row.getByText(`${value.slice(0, 8)}…${value.slice(-4)}`).waitFor();
    await row.getByText('all buckets').waitFor();
    await row.getByText(`Jun 30, ${year}`).waitFor();
    await screenshot(page, '36-mcp-tokens-created');

    // The configuration works as shown: its URL and header list the tools.
    const mcp = async () => {
      const res = await fetch(config.mcpServers.tapline.url, {
        method: 'POST',
        headers: {
          ...config.mcpServers.tapline.headers,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      return { status: res.status, text: await res.text() };
    };
    const listed = await mcp();
    expect(listed.status).toBe(200);
    expect(listed.text).toContain('list_events');

    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.getByTestId('mcp-config').waitFor();
    await row.getByRole('button', { name: 'Revoke assistant' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await row.getByText('revoked').waitFor();
    expect((await mcp()).status).toBe(401);
    await screenshot(page, '37-mcp-tokens-revoked');
  });

  it('renames the bucket, then deletes it after its name is typed', async () => {
    await page.goto('/settings/buckets');
    const row = page.getByRole('row').filter({ hasText: bucketSid });
    await row.getByText('connected').waitFor();
    await row.getByRole('button', { name: 'Rename' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill(`${bucketName} v2`);
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('link', { name: `${bucketName} v2` }).waitFor();

    await row.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByText('its stored requests and the metrics computed from them').waitFor();
    const confirm = dialog.getByRole('button', { name: 'Delete bucket' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(/Type the bucket's name/).fill(`${bucketName} v2`);
    await screenshot(page, '40-bucket-delete-confirm');
    await confirm.click();
    await page.getByText('No bucket yet').waitFor();
    expect((await apiCall('GET', `/v1/accounts/${accountSid}/buckets/${bucketSid}`)).status).toBe(404);
    await expect.poll(() => ingest(adminToken)).toBe(404);
    expect(me.errors).toEqual([]);
  });

  it('keeps the token pages readable at 390 px: tables scroll inside their panel, not the page', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    for (const [path, shot] of [
      ['/settings/tokens', '41-tokens-narrow'],
      ['/settings/mcp-tokens', '42-mcp-tokens-narrow'],
    ] as const) {
      await page.goto(path);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      await screenshot(page, shot);
      await page.getByRole('row').nth(1).waitFor();
      expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')).toBe(0);
    }
    await page.setViewportSize({ width: 1280, height: 720 });
    expect(me.errors).toEqual([]);
  });
});
