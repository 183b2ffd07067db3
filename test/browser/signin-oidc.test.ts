import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot } from '../helpers/browser.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { freePort, startService, type ServiceProcess } from '../helpers/service-process.js';

const env = inject('browserEnv');

/**
 * Single sign-on in Chromium (docs/auth.md "Single sign-on"): the sign-in page shows "Sign in
 * with Test IdP", the person signs in on the pages of a real OpenID provider (`oidc-provider`,
 * the certified reference implementation, on a loopback port), lands on the dashboard with the
 * role their groups map to, and signs out; a refused domain is explained on the sign-in page; with
 * OIDC_ONLY the password form is gone and the button leads to the provider. The OIDC settings belong to two services of this file
 * (ingest and API roles; the second with OIDC_ONLY) beside the browser stack's, on its Kafka and
 * Postgres.
 */
describe('dashboard: single sign-on with OpenID Connect', () => {
  let browser: Browser;
  let provider: TestProvider;
  let svc: ServiceProcess;
  /** the same settings with OIDC_ONLY */
  let only: ServiceProcess;
  const tag = randomBytes(4).toString('hex');
  const domain = `sso-${tag}.example.test`;

  beforeAll(async () => {
    const ports = [await freePort(), await freePort()];
    provider = await startTestProvider(
      ports.map((p) => `http://127.0.0.1:${p}/v1/authentication/oidc/callback`),
    );
    provider.people.set('grace', {
      email: `grace@${domain}`,
      email_verified: true,
      given_name: 'Grace',
      family_name: 'Hopper',
      groups: ['engineering', 'tapline-admins'],
    });
    provider.people.set('mallory', {
      email: `mallory@elsewhere-${tag}.example`,
      email_verified: true,
      groups: ['tapline-admins'],
    });
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    let accountSid: string;
    try {
      accountSid = (
        await createAccount(pool, {
          name: `SSO team ${tag}`,
          email: `owner@${domain}`,
          plan: 'pro',
          bucketName: `sso-${tag}`,
        })
      ).accountSid;
    } finally {
      await pool.end();
    }
    const serviceEnv = {
      ROLES: 'ingest,api',
      INGEST_PROCESS: 'inline',
      KAFKA_BROKERS: env.kafkaBrokers.join(','),
      DATABASE_URL: env.databaseUrl,
      OIDC_ISSUER_URL: provider.issuer,
      OIDC_CLIENT_ID: provider.clientId,
      OIDC_CLIENT_SECRET: provider.clientSecret,
      OIDC_PROVIDER_NAME: 'Test IdP',
      OIDC_SCOPES: 'openid email profile groups',
      OIDC_ALLOWED_DOMAINS: domain,
      OIDC_ROLE_MAP: '{"tapline-admins": "administrator", "engineering": "user"}',
      OIDC_ACCOUNT: accountSid,
    };
    const start = async (name: string, port: number, extra: Record<string, string>) => {
      const dataDir = path.join(env.dataDir, `oidc-${tag}-${name}`);
      fs.mkdirSync(dataDir, { recursive: true });
      return startService(
        {
          ...serviceEnv,
          ...extra,
          PORT: String(port),
          INGEST_PORT: String(await freePort()),
          DATA_DIR: dataDir,
        },
        path.join(dataDir, 'service.log'),
      );
    };
    svc = await start('both', ports[0]!, {});
    only = await start('only', ports[1]!, { OIDC_ONLY: 'true' });
    browser = await launchBrowser();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
    await only?.stop();
    await provider?.close();
  });

  /** From the sign-in page through the provider's login page as `login`. */
  async function signInAtProvider(page: Page, login: string): Promise<void> {
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await page.waitForURL((u) => u.origin === provider.issuer);
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
  }

  it('signs in through the provider, lands on the dashboard with the mapped role, and signs out', async () => {
    const { page } = await openPage(browser, svc.apiUrl, { width: 1440, height: 900 });
    // Errors of Tapline's own pages: the provider's development login page links a web font
    // that cannot load here, which is the provider's, not the dashboard's.
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && m.location().url.startsWith(svc.apiUrl)) errors.push(m.text());
    });
    page.on('pageerror', (e) => {
      if (page.url().startsWith(svc.apiUrl)) errors.push(e.message);
    });
    await page.goto('/signin');
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
    // Both methods are on: the password form stays below the button.
    await expect.poll(() => page.getByLabel('Password').count()).toBe(1);
    await screenshot(page, '90-signin-sso');

    await signInAtProvider(page, 'grace');
    await page.waitForURL((u) => u.origin === svc.apiUrl && u.pathname === '/overview');
    const user = page.locator('.user-email');
    await expect.poll(() => user.textContent()).toContain(`grace@${domain}`);
    await expect.poll(() => user.locator('.badge').textContent()).toBe('administrator');
    const session = await page.context().request.get('/v1/authentication/session');
    expect(await session.json()).toMatchObject({ kind: 'session', role: 'administrator' });

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.pathname === '/signin');
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
    expect((await page.context().request.get('/v1/authentication/session')).status()).toBe(401);

    // Signed out, the same person signs in again in the same browser: the provider may remember
    // them (no login page this time) or ask again; either way the dashboard works again.
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    const atOverview = () => page.waitForURL((u) => u.origin === svc.apiUrl && u.pathname === '/overview');
    const loginForm = page.locator('input[name="login"]');
    const first = await Promise.race([
      atOverview().then(() => 'overview' as const),
      loginForm.waitFor().then(() => 'login' as const),
    ]);
    if (first === 'login') {
      await loginForm.fill('grace');
      await page.locator('input[name="password"]').fill('any password');
      await page.getByRole('button', { name: 'Sign-in' }).click();
      await atOverview();
    }
    await expect.poll(() => user.textContent()).toContain(`grace@${domain}`);
    const again = await page.evaluate(async () => (await fetch('/v1/authentication/session')).status);
    expect(again).toBe(200);
    expect(errors).toEqual([]);
  });

  it('shows why a person of another email domain is refused, on the sign-in page', async () => {
    const { page } = await openPage(browser, svc.apiUrl, { width: 1440, height: 900 });
    await page.goto('/signin');
    await signInAtProvider(page, 'mallory');
    await page.waitForURL((u) => u.origin === svc.apiUrl && u.pathname === '/signin');
    expect(new URL(page.url()).searchParams.get('sso_error')).toBe('domain');
    await page
      .getByRole('alert')
      .filter({ hasText: 'Sign-in with Test IdP is not allowed for your email domain.' })
      .waitFor();
    await screenshot(page, '91-signin-sso-refused');
    expect((await page.context().request.get('/v1/authentication/session')).status()).toBe(401);
  });

  it('with OIDC_ONLY shows the single sign-on button and no password form', async () => {
    const { page } = await openPage(browser, only.apiUrl, { width: 1440, height: 900 });
    await page.goto('/signin');
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
    expect(await page.getByLabel('Password').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Sign in', exact: true }).count()).toBe(0);
    await screenshot(page, '92-signin-sso-only');
    // The button starts an attempt at the provider.
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await page.waitForURL((u) => u.origin === provider.issuer);
    await page.locator('input[name="login"]').waitFor();
  });
});
