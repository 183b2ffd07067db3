import { randomBytes } from 'node:crypto';
import { AxeBuilder } from '@axe-core/playwright';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');
const MIN = 60_000;
const CODES = ['XMAS24', 'FREESHIP', 'SPRING10', 'WELCOME5'];

/**
 * Endpoint template rules on the Endpoints page in real Chromium against the real stack: the
 * range's suggestion, rows selected and merged through the dialog (pattern proposed and
 * editable, the preview of what it merges, the API's refusal shown beside the field), the rule
 * listed with delete, and new traffic of the merged paths shown as one row.
 */
describe('dashboard: endpoint templates', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `templates-${tag}@example.test`;
  const password = 'templates password 1';
  let accountSid = '';
  let bucketSid = '';
  let apiToken = '';

  async function apiGet<T>(path: string): Promise<T> {
    const res = await fetch(env.apiUrl + path, { headers: { authorization: `Bearer ${apiToken}` } });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    return JSON.parse(text) as T;
  }

  async function send(paths: [string, string][], at = Date.now()): Promise<void> {
    const records = paths.map(([method, path], i) => ({
      createdAt: new Date(at - (i + 1) * 1000).toISOString(),
      request: { method, path, host: 'shop.example.com', headers: {} },
      response: { statusCode: 200 },
      timings: { duration: 30 + i },
    }));
    const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
  }

  const base = () => `/v1/accounts/${accountSid}/buckets/${bucketSid}/endpointTemplates`;

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, {
        name: `Templates ${tag}`,
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
    const now = Date.now();
    await send(
      [
        ...CODES.flatMap((c): [string, string][] => [
          ['GET', `/coupons/${c}`],
          ['GET', `/coupons/${c}`],
        ]),
        ['GET', '/orders'],
        ['POST', '/orders'],
        ['GET', '/health'],
      ],
      now - 5 * MIN,
    );
    // Stored and aggregated: the suggestion is drawn from the endpoint metrics.
    let patterns = '';
    for (let i = 0; i < 60 && patterns !== '/coupons/{coupon}'; i++) {
      if (i) await new Promise((r) => setTimeout(r, 1_000));
      const s = await apiGet<{ suggestions: { pattern: string }[] }>(`${base()}/suggestions`);
      patterns = s.suggestions.map((x) => x.pattern).join(',');
    }
    expect(patterns).toBe('/coupons/{coupon}');

    browser = await launchBrowser();
    me = await openPage(browser, env.apiUrl, { width: 1440, height: 900 });
    page = me.page;
    await signIn(page, email, password);
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function expectNoSeriousAxeViolation(): Promise<void> {
    const found: string[] = [];
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      const result = await new AxeBuilder({ page }).analyze();
      for (const v of result.violations)
        if (v.impact === 'serious' || v.impact === 'critical')
          found.push(`${colorScheme}: ${v.id} at ${v.nodes.map((n) => n.target.join(' ')).join(' | ')}`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    expect(found).toEqual([]);
  }

  /**
   * Chromium reports a refused fetch as a console error ("... status of 400"): a step that
   * provokes one on purpose takes exactly those out of the collected errors.
   */
  function dropExpected(since: number, status: number): void {
    const mine = (e: string) => e.includes(`status of ${status}`);
    expect(me.errors.slice(since).some(mine)).toBe(true);
    me.errors.splice(since, me.errors.length - since, ...me.errors.slice(since).filter((e) => !mine(e)));
  }

  const rows = () => page.getByTestId('endpoint-row');
  const endpointsShown = async () =>
    (await rows().locator('td:nth-child(2) a').allTextContents()).map((s) => s.trim()).sort();
  const dialog = () => page.locator('dialog[open]');

  it('offers the suggestion for the coupon codes above the endpoints', async () => {
    // The account's only bucket is used without picking it.
    await page.goto('/endpoints?range=1h');
    await page.getByRole('heading', { name: 'Endpoints', level: 1 }).waitFor();
    await expect
      .poll(endpointsShown, { timeout: 30_000 })
      .toEqual([...CODES.map((c) => `/coupons/${c}`), '/health', '/orders', '/orders'].sort());
    const suggestion = page.getByTestId('template-suggestion');
    await suggestion.waitFor();
    expect(await suggestion.textContent()).toContain('/coupons/{coupon}');
    expect(await suggestion.textContent()).toContain('merges 4 endpoints, 8 requests');
    await expect.poll(() => page.getByTestId('template-rule').count()).toBe(0);
    await page.getByText('No rules: ids are templated automatically').waitFor();
    await expectNoSeriousAxeViolation();
    await screenshot(page, 'endpoint-templates-1440');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'endpoint-templates-390');
    // The selection boxes stay in view at 390 px (the table scrolls under them).
    const box = await page
      .getByRole('checkbox', { name: 'Select GET /coupons/XMAS24 to merge' })
      .boundingBox();
    expect(box).not.toBeNull();
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('merges selected rows: proposed pattern, preview, the API refusal beside the field, then the rule', async () => {
    expect(await page.getByRole('button', { name: 'Merge into template', exact: true }).isDisabled()).toBe(
      true,
    );
    await page.getByRole('checkbox', { name: 'Select GET /coupons/XMAS24 to merge' }).check();
    await page.getByRole('checkbox', { name: 'Select GET /coupons/FREESHIP to merge' }).check();
    await page.getByRole('button', { name: 'Merge into template (2)' }).click();
    await dialog().getByRole('heading', { name: 'Merge into template' }).waitFor();
    const field = dialog().getByLabel('Pattern');
    expect(await field.inputValue()).toBe('/coupons/{coupon}');
    // The preview lists every listed endpoint the pattern merges, not only the selected ones.
    await expect
      .poll(() => dialog().getByTestId('merge-preview-count').textContent())
      .toBe('Merges 4 listed endpoints');
    expect((await dialog().getByTestId('merge-preview').locator('li').allTextContents()).sort()).toEqual(
      CODES.map((c) => `GET /coupons/${c}`).sort(),
    );
    // A method narrows the preview; a pattern that merges nothing says so.
    await dialog().getByLabel('Method').selectOption('POST');
    await expect
      .poll(() => dialog().getByTestId('merge-preview-count').textContent())
      .toBe('Merges none of the listed endpoints');
    await dialog().getByLabel('Method').selectOption('');
    await screenshot(page, 'endpoint-templates-dialog-1440');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'endpoint-templates-dialog-390');
    await page.setViewportSize({ width: 1440, height: 900 });

    // Saved as typed, the API refuses a pattern without a placeholder: its words under the field.
    const before400 = me.errors.length;
    await field.fill('/coupons');
    await dialog().getByRole('button', { name: 'Save template' }).click();
    const error = dialog().locator('#tpl-pattern-error');
    await error.waitFor();
    expect(await error.textContent()).toBe(
      'Pattern must have at least one {placeholder} segment (e.g. /coupons/{code})',
    );
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    dropExpected(before400, 400);
    await expectNoSeriousAxeViolation();
    await screenshot(page, 'endpoint-templates-dialog-error-1440');

    await field.fill('/coupons/{code}');
    expect(await error.count()).toBe(0);
    await dialog().getByRole('button', { name: 'Save template' }).click();
    await dialog().waitFor({ state: 'detached' });
    const rule = page.getByTestId('template-rule');
    await rule.waitFor();
    expect(await rule.textContent()).toContain('/coupons/{code}');
    expect(await rule.textContent()).toContain('every method');
    await page.getByText('A rule applies to requests received after it').waitFor();
    // Stored: the API lists it; the suggestion for the same paths is gone.
    const list = await apiGet<{ records: { pattern: string; method: string | null }[] }>(base());
    expect(list.records).toEqual([expect.objectContaining({ pattern: '/coupons/{code}', method: null })]);
    await expect.poll(() => page.getByTestId('template-suggestion').count(), { timeout: 10_000 }).toBe(0);
  });

  it('a second rule for the same paths is refused beside the field', async () => {
    await page.getByRole('checkbox', { name: 'Select GET /coupons/SPRING10 to merge' }).check();
    await page.getByRole('checkbox', { name: 'Select GET /coupons/WELCOME5 to merge' }).check();
    await page.getByRole('button', { name: /^Merge into template \(\d\)$/ }).click();
    const field = dialog().getByLabel('Pattern');
    const before409 = me.errors.length;
    await field.fill('/coupons/{id}');
    await dialog().getByRole('button', { name: 'Save template' }).click();
    const error = dialog().locator('#tpl-pattern-error');
    await error.waitFor();
    expect(await error.textContent()).toBe(
      'Pattern a rule of this bucket already matches the same paths (placeholder names aside) and method',
    );
    dropExpected(before409, 409);
    await dialog().getByRole('button', { name: 'Cancel' }).click();
    await dialog().waitFor({ state: 'detached' });
  });

  it('new traffic of the merged paths shows as one row', async () => {
    // The processor applies the rule to records sent after it (it reloads on the rules NOTIFY).
    let probeEndpoint = '';
    for (let i = 0; i < 30 && probeEndpoint !== '/coupons/{code}'; i++) {
      if (i) await new Promise((r) => setTimeout(r, 1_000));
      const probe = `/coupons/PROBE${i}`;
      await send([['GET', probe]]);
      for (let k = 0; k < 20; k++) {
        const list = await apiGet<{ records: { request: { path: string }; endpoint: string }[] }>(
          `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests?limit=50`,
        );
        const hit = list.records.find((r) => r.request.path === probe);
        if (hit) {
          probeEndpoint = hit.endpoint;
          break;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    expect(probeEndpoint).toBe('/coupons/{code}');
    await send(['NEW1', 'NEW2', 'XMAS24'].map((c): [string, string] => ['GET', `/coupons/${c}`]));
    await page.goto('/endpoints?range=1h&filter=coupons');
    const merged = rows().filter({ has: page.getByRole('link', { name: '/coupons/{code}', exact: true }) });
    const requests = async () => ((await merged.getByRole('cell').nth(3).textContent()) ?? '').trim();
    // The probe(s) and the three new requests, in one row; the old rows keep their endpoints.
    await expect.poll(async () => Number(await requests()), { timeout: 30_000 }).toBeGreaterThanOrEqual(4);
    expect(await merged.count()).toBe(1);
    expect(await endpointsShown()).toEqual([...CODES.map((c) => `/coupons/${c}`), '/coupons/{code}'].sort());
    await screenshot(page, 'endpoint-templates-merged-1440');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'endpoint-templates-merged-390');
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('deletes the rule from the list', async () => {
    await page.getByRole('button', { name: 'Delete template /coupons/{code}' }).click();
    await dialog().getByRole('heading', { name: 'Delete template rule' }).waitFor();
    await dialog().getByRole('button', { name: 'Delete rule' }).click();
    await dialog().waitFor({ state: 'detached' });
    await expect.poll(() => page.getByTestId('template-rule').count()).toBe(0);
    await page.getByText('No rules: ids are templated automatically').waitFor();
    expect((await apiGet<{ records: unknown[] }>(base())).records).toEqual([]);
    expect(me.errors).toEqual([]);
  });
});
