import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';
import { startReceiver } from '../helpers/http-receiver.js';

const env = inject('browserEnv');
const ENV = 'prod01';

/**
 * The workflow pages in real Chromium against the real stack: a webhook workflow is created in
 * the editor (template variable inserted from the picker, rendered on a real stored request),
 * "send a test" shows each action's result, a matching record fires it and the executions log
 * shows the receiver's status; the receiver then fails (500): retries, then the dead letter; a
 * re-run with the receiver healthy succeeds. The schedule editor previews the next runs. The
 * bucket is deleted at the end, its workflows with it.
 */
describe('dashboard workflows: editor, test, executions log, dead letter and re-run', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `workflows-${tag}@example.test`;
  const password = 'workflows password 1';
  const bucketName = `Shop ${tag}`;
  let accountSid = '';
  let adminToken = '';
  let bucketSid = '';
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let failing = false;
  let workflowUrl = '';

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

  async function ingest(path: string, statusCode: number): Promise<void> {
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        records: [{ environmentSid: ENV, request: { method: 'POST', path }, response: { statusCode } }],
      }),
    });
    await res.arrayBuffer();
    expect(res.status).toBe(202);
  }

  beforeAll(async () => {
    receiver = await startReceiver(() =>
      failing ? { status: 500, body: 'receiver down' } : { status: 200 },
    );
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, { name: `Workflows ${tag}`, email, password, plan: 'pro' });
      accountSid = acc.accountSid;
      adminToken = acc.apiToken;
    } finally {
      await pool.end();
    }
    const b = await apiCall('POST', `/v1/accounts/${accountSid}/buckets`, { name: bucketName });
    bucketSid = String(b.json.sid);
    // A stored error request: the sample the template picker renders on.
    await ingest(`/pay/${tag}/0`, 502);
    // expect.poll is for tests only: a plain wait until the record is stored.
    const until = Date.now() + 30_000;
    for (;;) {
      const r = await apiCall('GET', `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests`);
      if (((r.json.records as unknown[] | undefined) ?? []).length === 1) break;
      if (Date.now() > until) throw new Error('the sample request was not stored within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl);
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
  });

  it('previews a schedule: its description and the next five runs in the chosen time zone', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows' }).click();
    await page.getByRole('heading', { name: 'Workflows', level: 1 }).waitFor();
    await page.getByText('No workflow yet').waitFor();
    await screenshot(page, 'wf-1-workflows-empty');
    await page.getByRole('link', { name: 'New workflow' }).click();
    await page.getByRole('heading', { name: 'New workflow', level: 1 }).waitFor();
    await page.getByLabel('Fires on').selectOption('schedule');
    await page.getByLabel('Cron expression').fill('30 9 * * 1-5');
    await page.getByLabel('Time zone').fill('America/New_York');
    const preview = page.getByTestId('cron-preview');
    await preview.getByText('At 09:30, Monday through Friday').waitFor();
    const runs = await preview.getByRole('listitem').allTextContents();
    expect(runs).toHaveLength(5);
    for (const r of runs) expect(r).toMatch(/(Mon|Tue|Wed|Thu|Fri), .* 09:30 GMT-[45]$/);
    await screenshot(page, 'wf-2-workflow-schedule-preview');
    await page.getByLabel('Cron expression').fill('61 * * * *');
    await preview.getByText(/61/).waitFor();
    expect(me.errors).toEqual([]);
  });

  it('creates a webhook workflow with a variable from the picker, rendered on a stored request; sends a test', async () => {
    await page.goto('/settings/workflows/new');
    const form = page.getByRole('form', { name: 'Workflow' });
    await form.getByLabel('Name', { exact: true }).fill('Pay errors');
    await form.getByLabel('Bucket').selectOption(bucketSid);
    await form.getByLabel('Environment sid').fill(ENV);
    await form.getByLabel('Fires on').selectOption('error');
    await form.getByRole('button', { name: 'Add condition' }).click();
    await form.getByLabel('Path of condition 1').fill(`/pay/${tag}/*`);
    await form.getByLabel('URL', { exact: true }).fill(`${receiver.url}/hook`);

    // The picker shows values of the stored request; Insert puts the variable at the cursor.
    await page.getByTestId('wf-sample').getByText(`/pay/${tag}/0`).waitFor();
    const headers = form.getByLabel(/^Headers/);
    await headers.fill('X-Path: ');
    await headers.focus();
    await page.getByRole('button', { name: 'Insert {{request.path}}' }).click();
    await expect.poll(() => headers.inputValue()).toBe('X-Path: {{request.path}}');
    await page.getByText('Rendered on the sample request').click();
    await page.getByText(`"X-Path": "/pay/${tag}/0"`).waitFor();
    await screenshot(page, 'wf-3-workflow-new');

    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.getByRole('heading', { name: 'Pay errors', level: 1 }).waitFor();
    workflowUrl = new URL(page.url()).pathname;
    expect(workflowUrl).toMatch(new RegExp(`^/settings/workflows/${bucketSid}/${ENV}/wfl_`));
    // A saved header value is a secret: the editor shows its mask and says what the mask means.
    await expect.poll(() => headers.inputValue()).toBe('X-Path: ****');
    await form.getByText('**** stands for a stored secret').waitFor();

    await page.getByRole('button', { name: 'Send a test' }).click();
    const results = page.getByRole('table', { name: 'Test results' });
    await results.getByText('succeeded').waitFor();
    await results.getByText('HTTP 200').waitFor();
    const testCall = receiver.callsTo('/hook').at(-1)!;
    expect(testCall.headers['x-path']).toBe(`/pay/${tag}/0`);
    await screenshot(page, 'wf-4-workflow-test-sent');
    expect(me.errors).toEqual([]);
  });

  it('fires on a matching record: the log shows the execution with the receiver status', async () => {
    const calls = receiver.callsTo('/hook').length;
    // The processor reloads workflows on NOTIFY: resend until the hit arrives.
    await expect
      .poll(
        async () => {
          if (receiver.callsTo('/hook').length > calls) return true;
          await ingest(`/pay/${tag}/1`, 503);
          return false;
        },
        { timeout: 30_000, interval: 2000 },
      )
      .toBe(true);
    await page.getByRole('link', { name: 'Executions log' }).click();
    await page.getByRole('heading', { name: 'Executions: Pay errors', level: 1 }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'succeeded' }).first();
    await row.getByText('HTTP 200').waitFor({ timeout: 20_000 });
    await row.getByText(/^req_/).waitFor();
    await screenshot(page, 'wf-5-workflow-executions');
  });

  it('shows retries then the dead letter when the receiver fails, and a re-run that succeeds', async () => {
    failing = true;
    await ingest(`/pay/${tag}/2`, 500);
    const dead = page.getByRole('row').filter({ hasText: 'dead-lettered' });
    await dead.waitFor({ timeout: 60_000 });
    await dead.getByText('HTTP 500').waitFor();
    expect(await dead.getByRole('cell').nth(3).textContent()).toBe('5');
    await dead.getByText(/receiver answered 500/).waitFor();

    // The filter is in the URL: a reload keeps it.
    await page.getByLabel('Dead letter').selectOption('yes');
    await expect.poll(() => new URL(page.url()).searchParams.get('dead')).toBe('yes');
    await page.reload();
    await expect.poll(() => page.getByRole('row').count()).toBe(2);
    await screenshot(page, 'wf-6-workflow-dead-letter');

    failing = false;
    const sid = ((await dead.getAttribute('data-testid')) ?? '').replace('execution-', '');
    expect(sid).toMatch(/^wfx_/);
    await page.getByRole('button', { name: `Re-run execution ${sid}` }).click();
    await page.getByLabel('Dead letter').selectOption('');
    const rerun = page.getByTestId(`execution-${sid}`);
    await rerun.getByText('succeeded').waitFor({ timeout: 30_000 });
    await rerun.getByText('HTTP 200').waitFor();
    expect(await rerun.getByRole('cell').nth(3).textContent()).toBe('1');
    expect(
      receiver
        .callsTo('/hook')
        .filter((c) => c.headers['x-tapline-execution'] === sid)
        .at(-1),
    ).toBeTruthy();
    await screenshot(page, 'wf-7-workflow-rerun');
    expect(me.errors).toEqual([]);
  });

  it('lists the workflow with its state and last execution; pauses it', async () => {
    await page.getByRole('link', { name: '← All workflows' }).click();
    const row = page.getByRole('row').filter({ hasText: 'Pay errors' });
    await row.getByText('active', { exact: true }).waitFor();
    await row.getByText('succeeded').waitFor();
    await screenshot(page, 'wf-8-workflows-list');
    await row.getByRole('button', { name: 'Pause Pay errors' }).click();
    await row.getByText('paused', { exact: true }).waitFor();
    const wf = await apiCall('GET', `/v1/accounts/${accountSid}/workflows`);
    expect((wf.json.records as { isActive: boolean }[])[0]?.isActive).toBe(false);

    await page.setViewportSize({ width: 390, height: 800 });
    for (const [path, shot] of [
      ['/settings/workflows', 'wf-9-workflows-narrow'],
      [workflowUrl, 'wf-10-workflow-edit-narrow'],
    ] as const) {
      await page.goto(path);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      await screenshot(page, shot);
      // The elements sticking out on the right, named, so a failure says what to fix.
      const wide = await page.evaluate<string[]>(`[...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
        .filter((e) => ![...e.children].some((c) => c.getBoundingClientRect().right > window.innerWidth + 1))
        .slice(0, 5)
        .map((e) => e.tagName + '.' + e.className + ' ' + (e.textContent || '').slice(0, 40))`);
      expect(
        await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'),
        `${path}: ${wide.join(' | ')}`,
      ).toBe(0);
    }
    await page.setViewportSize({ width: 1280, height: 720 });
    expect(me.errors).toEqual([]);
  });

  it('deletes the bucket, and its workflow with it', async () => {
    await page.goto('/settings/buckets');
    const row = page.getByRole('row').filter({ hasText: bucketSid });
    await row.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel(/Type the bucket's name/).fill(bucketName);
    await dialog.getByRole('button', { name: 'Delete bucket' }).click();
    await page.getByText('No bucket yet').waitFor();
    await page.goto('/settings/workflows');
    await page.getByText('No workflow yet').waitFor();
    expect(me.errors).toEqual([]);
  });
});
