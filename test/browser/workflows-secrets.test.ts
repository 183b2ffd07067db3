import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';
import { startReceiver } from '../helpers/http-receiver.js';

const env = inject('browserEnv');
const ENV = 'prod01';
const SECRET = 'HOOKHEADERSECRET777';

/**
 * The workflow editor and a stored secret (docs/security.md "Secrets at rest"): a webhook's header
 * value reads as `****`; moving the URL to another origin (another port here) with the header
 * still masked is refused by the API, and the editor shows why beside the Headers field, for "send a
 * test" and for a save; the other receiver gets nothing. Typing the value again saves.
 */
describe('dashboard workflows: a masked secret and a URL moved to another origin', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `wf-secrets-${tag}@example.test`;
  const password = 'workflow secrets pw 1';
  let home: Awaited<ReturnType<typeof startReceiver>>;
  let other: Awaited<ReturnType<typeof startReceiver>>;
  let editUrl = '';

  beforeAll(async () => {
    home = await startReceiver();
    other = await startReceiver();
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    let accountSid = '';
    let bucketSid = '';
    let token = '';
    try {
      const acc = await createAccount(pool, {
        name: `Secrets ${tag}`,
        email,
        password,
        plan: 'pro',
        bucketName: `hooks-${tag}`,
      });
      accountSid = acc.accountSid;
      bucketSid = String(acc.bucketSid);
      token = acc.apiToken;
    } finally {
      await pool.end();
    }
    const res = await fetch(
      `${env.apiUrl}/v1/accounts/${accountSid}/environments/${ENV}/buckets/${bucketSid}/workflows`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `Pager ${tag}`,
          isActive: false,
          trigger: { type: 'error', conditions: [{ path: `/never-${tag}/*` }] },
          actions: [
            {
              type: 'webhook',
              config: { url: `${home.url}/hook`, headers: { 'X-Hook-Auth': SECRET } },
            },
          ],
        }),
      },
    );
    const created = (await res.json()) as { sid: string };
    expect(res.status).toBe(201);
    editUrl = `/settings/workflows/${bucketSid}/${ENV}/${created.sid}`;

    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl, { height: 1000 });
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
    await home?.close();
    await other?.close();
  });

  it('shows the refusal beside the Headers field on test and on save; a value typed again saves', async () => {
    await page.goto(editUrl);
    await page.getByRole('heading', { name: `Pager ${tag}`, level: 1 }).waitFor();
    const form = page.getByRole('form', { name: 'Workflow' });
    const headers = form.getByLabel(/^Headers/);
    await expect.poll(() => headers.inputValue()).toBe('X-Hook-Auth: ****');
    await form.getByLabel('URL', { exact: true }).fill(`${other.url}/hook`);

    const fieldError = form
      .locator('.field')
      .filter({ has: page.getByLabel(/^Headers/) })
      .locator('.field-error');
    const refusal =
      "X-Hook-Auth is masked (****); enter its value again when the URL's origin (scheme, host or port) changes";

    // "Send a test" with the edited URL: refused, said in the test panel and beside the field.
    await page.getByRole('button', { name: 'Send a test' }).click();
    const testPanel = page.getByRole('region', { name: 'Send a test' });
    await testPanel.getByRole('alert').filter({ hasText: 'Fix the fields marked in the actions.' }).waitFor();
    await fieldError.waitFor();
    expect(await fieldError.textContent()).toBe(refusal);
    expect(await headers.getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'wf-11-workflow-masked-secret-test-refused');

    // Saving it: the same refusal beside the field; above the save button a pointer to it, not the
    // message again with its API path.
    await page.getByRole('button', { name: 'Save workflow' }).click();
    await form.getByRole('alert').filter({ hasText: 'Fix the fields marked above.' }).waitFor();
    expect(await page.getByText('actions.0.config.headers').count()).toBe(0);
    expect(await testPanel.getByRole('alert').count()).toBe(0);
    expect(await fieldError.textContent()).toBe(refusal);
    await screenshot(page, 'wf-12-workflow-masked-secret-save-refused');
    expect(other.calls).toEqual([]);

    await headers.fill('X-Hook-Auth: NEWVALUE-typed-again');
    await page.getByRole('button', { name: 'Save workflow' }).click();
    await form.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await expect.poll(() => fieldError.count()).toBe(0);
    // Read again, the new value is masked; a test of what was read sends it to the new origin.
    await page.reload();
    await expect.poll(() => headers.inputValue()).toBe('X-Hook-Auth: ****');
    expect(await form.getByLabel('URL', { exact: true }).inputValue()).toBe(`${other.url}/hook`);
    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.getByRole('table', { name: 'Test results' }).getByText('HTTP 200').waitFor();
    expect(other.callsTo('/hook').map((c) => c.headers['x-hook-auth'])).toEqual(['NEWVALUE-typed-again']);
    expect(JSON.stringify(other.calls)).not.toContain(SECRET);
    await screenshot(page, 'wf-13-workflow-secret-typed-again');
    expect(me.errors.filter((e) => !e.includes('400'))).toEqual([]);
  });
});
