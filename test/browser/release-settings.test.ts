import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');

/**
 * The "Release impact windows" panel of a bucket's setup page in real Chromium against the real
 * stack: the defaults 30/30/2, new windows saved and read back through the API, and the API's
 * refusal of a too short window shown beside that field. Screenshots at 1440 and 390 px
 * (.cache/screenshots/release-settings-*.png).
 */
describe('dashboard: release impact windows of a bucket', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `relwin-${tag}@example.test`;
  const password = 'relwin password 1';
  let accountSid = '';
  let bucketSid = '';
  let apiToken = '';

  async function readSettings(): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await fetch(`${env.apiUrl}/v1/accounts/${accountSid}/buckets/${bucketSid}/releaseSettings`, {
      headers: { authorization: `Bearer ${apiToken}` },
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  }

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, {
        name: `Relwin ${tag}`,
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
    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl, { width: 1440, height: 900 });
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
  });

  const panel = () => page.getByRole('region', { name: 'Release impact windows' });
  const before = () => panel().getByLabel('Minutes before');
  const after = () => panel().getByLabel('Minutes after');
  const settle = () => panel().getByLabel('Settling minutes');

  /** Both widths; at 390 px the page never scrolls sideways. */
  async function shots(name: string): Promise<void> {
    await panel().scrollIntoViewIfNeeded();
    await screenshot(page, `${name}-1440`);
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await panel().scrollIntoViewIfNeeded();
      await screenshot(page, `${name}-390`);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')).toBe(0);
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
  }

  it('shows the defaults, saves new windows the API then answers, and shows a refusal beside its field', async () => {
    await page.goto(`/settings/buckets/${bucketSid}`);
    await page.getByRole('heading', { name: 'Shop API', level: 1 }).waitFor();
    await panel().getByRole('heading', { name: 'Release impact windows' }).waitFor();

    await expect.poll(() => before().inputValue()).toBe('30');
    expect(await after().inputValue()).toBe('30');
    expect(await settle().inputValue()).toBe('2');
    expect(await panel().getByTestId('release-settings-state').textContent()).toContain('never changed');
    expect(await panel().getByRole('button', { name: 'Save windows' }).isDisabled()).toBe(true);
    await shots('release-settings-defaults');

    await before().fill('45');
    await after().fill('20');
    await settle().fill('5');
    await panel().getByRole('button', { name: 'Save windows' }).click();
    await panel().getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect(await panel().getByTestId('release-settings-state').textContent()).toContain('Last changed');
    const saved = await readSettings();
    expect(saved.status).toBe(200);
    expect(saved.json).toMatchObject({ bucketSid, beforeMinutes: 45, afterMinutes: 20, settleMinutes: 5 });
    expect(saved.json.updatedAt).toEqual(expect.any(String));

    // A reload shows the stored windows.
    await page.reload();
    await expect.poll(() => before().inputValue()).toBe('45');
    expect(await after().inputValue()).toBe('20');
    expect(await settle().inputValue()).toBe('5');

    // 0 minutes before: the API refuses it, its message beside "Minutes before", nothing stored.
    await before().fill('0');
    await panel().getByRole('button', { name: 'Save windows' }).click();
    const error = panel().locator('#release-beforeMinutes-error');
    await error.waitFor();
    const message = (await error.textContent()) ?? '';
    expect(message).toMatch(/5/);
    expect(await before().getAttribute('aria-invalid')).toBe('true');
    expect(await before().getAttribute('aria-describedby')).toBe('release-beforeMinutes-error');
    expect(await panel().locator('.field-error').count()).toBe(1);
    expect(await panel().locator('.form-error').count()).toBe(0);
    const direct = await fetch(
      `${env.apiUrl}/v1/accounts/${accountSid}/buckets/${bucketSid}/releaseSettings`,
      {
        method: 'PUT',
        headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ beforeMinutes: 0, afterMinutes: 20, settleMinutes: 5 }),
      },
    );
    const envelope = (await direct.json()) as { error: { details: Record<string, string> } };
    expect(direct.status).toBe(400);
    expect(envelope.error.details['body.beforeMinutes']).toBe(message);
    expect((await readSettings()).json).toMatchObject({
      beforeMinutes: 45,
      afterMinutes: 20,
      settleMinutes: 5,
    });
    await shots('release-settings-refused');

    // Not a number: told beside the field before anything is sent.
    await before().fill('');
    await panel().getByRole('button', { name: 'Save windows' }).click();
    expect(await error.textContent()).toBe('must be a whole number');

    // Back to the defaults.
    await panel().getByRole('button', { name: 'Use the defaults' }).click();
    await panel().getByRole('button', { name: 'Save windows' }).click();
    await panel().getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect((await readSettings()).json).toMatchObject({
      beforeMinutes: 30,
      afterMinutes: 30,
      settleMinutes: 2,
    });
    // The refused save is the only failed call Chromium logs.
    expect(me.errors.filter((e) => !e.includes('status of 400'))).toEqual([]);
  });
});
