import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');

/** Buckets in the dashboard: create, set up with a copied snippet, connected live, rename, delete. */
describe('dashboard buckets', () => {
  let browser: Browser;
  let me: OpenedPage;
  const tag = randomBytes(4).toString('hex');
  const email = `buckets-${tag}@example.test`;
  const password = 'buckets password 1';
  let apiToken = '';

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      apiToken = (await createAccount(pool, { name: `Buckets ${tag}`, email, password })).apiToken;
    } finally {
      await pool.end();
    }
    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl);
    await signIn(me.page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('creates a bucket, turns connected without reload after its copied curl runs, renames and deletes it', async () => {
    const { page } = me;
    await page.goto('/settings/buckets');
    await page.getByText('No bucket yet').waitFor();
    await page.getByLabel('Name').fill('Checkout API');
    await page.getByRole('button', { name: 'Create bucket' }).click();
    await page.getByRole('link', { name: 'Set it up →' }).click();
    const status = page.getByTestId('bucket-connection');
    await expect.poll(() => status.textContent()).toContain('Waiting for the first request');
    await screenshot(page, '60-bucket-setup-waiting');

    // The batch curl as the page shows it, run from the test over HTTP.
    const curl = (await page.getByTestId('ingest-curl').textContent()) ?? '';
    const url = /curl -X POST (\S+)/.exec(curl)?.[1];
    const body = /-d '(.+)'$/m.exec(curl)?.[1];
    expect(url).toBe(`${env.ingestUrl}${new URL(url!).pathname}`);
    const res = await fetch(url!, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: body!,
    });
    expect(res.status).toBe(202);
    await expect.poll(() => status.textContent(), { timeout: 15_000 }).toContain('Connected');
    await screenshot(page, '61-bucket-setup-connected');

    await page.getByRole('link', { name: '← Buckets' }).click();
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('Name', { exact: true }).last().fill('Checkout API v2');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('link', { name: 'Checkout API v2' }).waitFor();
    // The rename is confirmed in a status notice, as the rule pages confirm their saves.
    const notice = page.locator('.notice[role="status"]');
    await expect.poll(() => notice.textContent()).toBe('“Checkout API” is renamed to “Checkout API v2”.');
    await screenshot(page, '62-buckets');

    await page.getByRole('button', { name: 'Delete' }).click();
    const confirm = page.getByRole('button', { name: 'Delete bucket' });
    expect(await confirm.isDisabled()).toBe(true);
    await page.getByLabel(/Type the bucket's name/).fill('Checkout API v2');
    await confirm.click();
    await page.getByText('No bucket yet').waitFor();
    await expect
      .poll(() => notice.textContent())
      .toBe('“Checkout API v2” is deleted, with its stored requests.');
    await screenshot(page, '63-buckets-deleted');
    expect(me.errors).toEqual([]);
  });
});
