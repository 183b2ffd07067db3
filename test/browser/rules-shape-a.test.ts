import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot, type OpenedPage, signIn } from '../helpers/browser.js';

const env = inject('browserEnv');

type Stored = {
  sid: string;
  request: { method?: string; path?: string; body?: unknown };
  redacted?: boolean;
};

/**
 * Shape A rules from the dashboard in real Chromium against the real stack: a redaction by data
 * type (email, partial) and an exclusion by search criteria, whose parse error is shown at the
 * field with its position; then traffic shows both applied by the processor.
 */
describe('dashboard: Shape A rules', () => {
  let browser: Browser;
  let me: OpenedPage;
  let page: Page;
  const tag = randomBytes(4).toString('hex');
  const email = `shape-a-${tag}@example.test`;
  const password = 'shape a password 1';
  let accountSid = '';
  let bucketSid = '';
  let token = '';

  async function stored(): Promise<Stored[]> {
    const res = await fetch(
      `${env.apiUrl}/v1/accounts/${accountSid}/buckets/${bucketSid}/requests?limit=100`,
      {
        headers: { authorization: `Bearer ${token}` },
      },
    );
    return ((await res.json()) as { records: Stored[] }).records;
  }

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      const acc = await createAccount(pool, {
        name: `Shape A ${tag}`,
        email,
        password,
        plan: 'pro',
        bucketName: `shape-a-${tag}`,
      });
      accountSid = acc.accountSid;
      token = acc.apiToken;
      bucketSid = acc.bucketSid!;
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

  it('creates a redaction by data type from the catalogue', async () => {
    await page.goto('/settings/redactions');
    await page.getByRole('heading', { name: 'Redactions', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Redact a data type' }).click();
    await page.getByRole('heading', { name: 'New redaction by data type' }).waitFor();
    await page.locator('#redaction-a-type').selectOption('email');
    await page.locator('#redaction-a-level').selectOption('partial');
    // The catalogue's description of the chosen type is shown under the picker.
    await expect
      .poll(() => page.locator('#redaction-a-type ~ .hint').textContent())
      .toMatch(/Matches e\.g\./);
    await screenshot(page, '70-shape-a-redaction-form');
    await page.getByRole('button', { name: 'Create redaction' }).click();
    await page.getByText('is saved and enabled').waitFor();
    const row = page.getByRole('row').filter({ hasText: 'email' });
    await expect.poll(() => row.count()).toBe(1);
    await screenshot(page, '71-shape-a-redaction-listed');
  });

  it('shows the criteria parse error at its position, then creates the exclusion', async () => {
    await page.goto('/settings/exclusions');
    await page.getByRole('heading', { name: 'Exclusions', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Exclude by criteria' }).click();
    await page.getByRole('heading', { name: 'New exclusion by search criteria' }).waitFor();
    const criteria = page.locator('#exclusion-a-criteria');
    const errorsBefore = me.errors.length;
    await criteria.fill('path:/health status:abc');
    await page.getByRole('button', { name: 'Create exclusion' }).click();
    const alert = page.locator('#exclusion-a-criteria-error');
    await alert.waitFor();
    // The API's message at the field, and a caret under the offset it points at (13: status:abc).
    await expect.poll(() => alert.textContent()).toContain('Invalid status code "abc"');
    await expect
      .poll(() => alert.locator('pre').textContent())
      .toBe(`path:/health status:abc\n${' '.repeat(13)}^`);
    await expect.poll(() => criteria.getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, '72-shape-a-criteria-error');
    // Chromium logs the 400 in the console: expected here, so it is not a page error.
    expect(me.errors.slice(errorsBefore).every((e) => e.includes('status of 400'))).toBe(true);
    me.errors.splice(errorsBefore);

    await criteria.fill('method:OPTIONS');
    await page.getByRole('button', { name: 'Create exclusion' }).click();
    await page.getByText('is saved and enabled').waitFor();
    await expect.poll(() => page.getByRole('row').filter({ hasText: 'method:OPTIONS' }).count()).toBe(1);
    await screenshot(page, '73-shape-a-exclusion-listed');
  });

  it('applies both rules to traffic', async () => {
    const record = (method: string, path: string, body: string) => ({
      createdAt: new Date().toISOString(),
      request: { method, url: `https://api.example.test${path}`, path, body },
      response: { statusCode: 200 },
    });
    // The processor reloads an account's rules on their change NOTIFY: batches are sent until one
    // is stored with both rules applied (a POST and an OPTIONS to the same path, one Kafka message,
    // so the POST is visible only once the whole block is stored).
    let attempt = 0;
    await expect
      .poll(
        async () => {
          const path = `/contact/${++attempt}`;
          const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              records: [
                record('POST', path, 'write to jane.doe@corp.example.com'),
                record('OPTIONS', path, ''),
              ],
            }),
          });
          expect(res.status).toBe(202);
          for (let i = 0; i < 20; i++) {
            const mine = (await stored()).filter((r) => r.request.path === path);
            const post = mine.find((r) => r.request.method === 'POST');
            if (post) {
              const options = mine.some((r) => r.request.method === 'OPTIONS');
              return { redacted: post.redacted === true, body: post.request.body, options };
            }
            await new Promise((r) => setTimeout(r, 250));
          }
          return undefined;
        },
        { timeout: 45_000, interval: 500 },
      )
      .toEqual({ redacted: true, body: 'write to ****.***@corp.example.com', options: false });
  });

  it('marks a value redacted by data type ([REDACTED:password]) with the redacted badge', async () => {
    const rule = await fetch(`${env.apiUrl}/v1/accounts/${accountSid}/redactions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'password', level: 'full', description: 'passwords' }),
    });
    expect(rule.status, await rule.text()).toBe(201);
    // Sent until a record arrives redacted (the processor reloads the rules on their NOTIFY).
    let attempt = 0;
    let sid = '';
    await expect
      .poll(
        async () => {
          const path = `/login/${++attempt}`;
          const res = await fetch(`${env.ingestUrl}/v1/buckets/${bucketSid}/ingest`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              records: [
                {
                  createdAt: new Date().toISOString(),
                  request: {
                    method: 'POST',
                    url: `https://api.example.test${path}`,
                    path,
                    headers: { 'content-type': 'application/json' },
                    body: JSON.stringify({ user: 'ada', password: 'hunter2' }),
                  },
                  response: { statusCode: 200 },
                },
              ],
            }),
          });
          expect(res.status).toBe(202);
          for (let i = 0; i < 20; i++) {
            const hit = (await stored()).find((r) => r.request.path === path);
            if (hit) {
              sid = hit.sid;
              return JSON.stringify(hit.request.body).includes('[REDACTED:password]');
            }
            await new Promise((r) => setTimeout(r, 250));
          }
          return false;
        },
        { timeout: 45_000, interval: 500 },
      )
      .toBe(true);
    await page.goto(`/requests/${bucketSid}/${sid}?bucket=${bucketSid}`);
    const redacted = page.getByTestId('redacted');
    await redacted.first().waitFor();
    // The same badge as a field-path redaction's `[REDACTED]`, on the data type's mark only.
    expect(await redacted.count()).toBe(1);
    expect(await redacted.textContent()).toBe('redacted[REDACTED:password]');
    expect(await redacted.locator('.redacted-tag').textContent()).toBe('redacted');
    expect(await redacted.getAttribute('title')).toMatch(/redaction rule/i);
    await screenshot(page, '74-shape-a-request-redacted-by-type');
    expect(me.errors).toEqual([]);
  });

  it('starts a new account with the recommended redactions active; once removed, adds them back in one click', async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    const fresh = { email: `recommended-${tag}@example.test`, password: 'recommended password 1' };
    let freshSid = '';
    let freshToken = '';
    try {
      const acc = await createAccount(pool, {
        name: `Recommended ${tag}`,
        ...fresh,
        plan: 'pro',
        bucketName: `recommended-${tag}`,
      });
      freshSid = acc.accountSid;
      freshToken = acc.apiToken;
    } finally {
      await pool.end();
    }
    const listRules = async () => {
      const res = await fetch(`${env.apiUrl}/v1/accounts/${freshSid}/redactions?limit=100`, {
        headers: { authorization: `Bearer ${freshToken}` },
      });
      return (
        (await res.json()) as {
          records: { sid: string; type?: string; level?: string; redactAt: string; enabled?: boolean }[];
        }
      ).records;
    };
    // A second person gets a browser of their own (one Chromium process holds one context well).
    const second = await launchBrowser();
    const other = await openPage(second, env.apiUrl);
    try {
      await signIn(other.page, fresh.email, fresh.password);
      await other.page.goto('/settings/redactions');
      // The new account's rules are listed as active, like any rule.
      for (const label of [
        'Authorization headers and credentials',
        'Passwords, secrets, tokens and cookies',
        'API keys',
        'JSON Web Tokens',
        'Card numbers (last 4 digits kept)',
      ])
        await other.page.getByRole('row').filter({ hasText: label }).first().waitFor();
      expect(await other.page.getByRole('checkbox', { name: 'Active: API keys' }).isChecked()).toBe(true);
      expect(await other.page.getByRole('button', { name: 'Add the recommended redactions' }).count()).toBe(
        0,
      );
      await screenshot(other.page, '75-redactions-new-account-defaults');
      // Removable like any rule: one through the page, the rest through the API.
      await other.page.getByRole('button', { name: 'Delete API keys' }).click();
      await other.page.getByRole('dialog').getByRole('button', { name: 'Delete redaction' }).click();
      await expect.poll(async () => (await listRules()).length).toBe(4);
      for (const r of await listRules()) {
        const del = await fetch(`${env.apiUrl}/v1/accounts/${freshSid}/redactions/${r.sid}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${freshToken}` },
        });
        expect(del.status).toBe(200);
      }
      await other.page.reload();
      await other.page.getByText('No redaction rules').waitFor();
      await other.page.getByText(/traffic is stored as sent/).waitFor();
      await other.page.getByRole('button', { name: 'Add the recommended redactions' }).click();
      await other.page.getByText('5 recommended redactions are added.').waitFor();
      for (const label of ['Passwords', 'API keys', 'Card numbers (last 4 digits kept)'])
        await other.page.getByRole('row').filter({ hasText: label }).first().waitFor();
      await screenshot(other.page, '76-redactions-recommended-added');

      const rules = await listRules();
      expect(rules.map((r) => [r.type, r.level, r.redactAt, r.enabled]).sort()).toEqual([
        ['api_key', 'full', 'server', true],
        ['authorization', 'full', 'server', true],
        ['card', 'partial', 'server', true],
        ['jwt', 'full', 'server', true],
        ['password', 'full', 'server', true],
      ]);
      // With rules in place the offer is gone.
      expect(await other.page.getByRole('button', { name: 'Add the recommended redactions' }).count()).toBe(
        0,
      );
      expect(other.errors).toEqual([]);
    } finally {
      await second.close();
    }
  });
});
