import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { launchBrowser, openPage, screenshot } from '../helpers/browser.js';

const env = inject('browserEnv');

/**
 * An invitation sent to the email of a person who already has a Tapline user (here the
 * administrator of another account): the invite page asks for that person's own password, shows
 * the server's refusal of a wrong one, and signs them in to the new account with the right one.
 * The link never sets their password (the inviter holds it).
 */
describe('dashboard: invitation of an existing user', () => {
  let browser: Browser;
  const tag = randomBytes(4).toString('hex');
  const person = { email: `existing-${tag}@example.test`, password: 'existing person pw 1' };
  const inviter = { email: `inviter-${tag}@example.test`, password: 'inviter password 1' };
  let inviteUrl = '';
  let inviterAccount = '';

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
    try {
      await createAccount(pool, { name: `Home ${tag}`, ...person, plan: 'pro', bucketName: `home-${tag}` });
      const other = await createAccount(pool, {
        name: `Team ${tag}`,
        ...inviter,
        plan: 'pro',
        bucketName: `team-${tag}`,
      });
      inviterAccount = other.accountSid;
    } finally {
      await pool.end();
    }
    const signin = await fetch(`${env.apiUrl}/v1/authentication/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(inviter),
    });
    const { sessionToken } = (await signin.json()) as { sessionToken: string };
    const inv = await fetch(`${env.apiUrl}/v1/accounts/${inviterAccount}/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sessionToken}` },
      body: JSON.stringify({ email: person.email, role: 'user' }),
    });
    expect(inv.status).toBe(201);
    inviteUrl = ((await inv.json()) as { inviteUrl: string }).inviteUrl;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('asks for the existing password, shows a wrong one refused, joins with the right one', async () => {
    const { page, errors } = await openPage(browser, env.apiUrl);
    const url = new URL(inviteUrl);
    await page.goto(url.pathname + url.search);
    await page.getByRole('heading', { name: `Join Team ${tag}` }).waitFor();
    // The page cannot tell a known person from a new one (the API does not say before the person
    // proves who they are): one form, which asks for the existing password or a new one.
    await expect
      .poll(() => page.getByText('already has a Tapline password, enter it to join').count())
      .toBe(1);
    const info = await page
      .context()
      .request.get(`${env.apiUrl}/v1/invites/${url.pathname.split('/').pop()}`);
    expect(Object.keys((await info.json()) as object).sort()).toEqual([
      'accountName',
      'email',
      'expiresAt',
      'role',
    ]);
    await page.getByLabel('Password').fill('not my password 1');
    await page.getByRole('button', { name: 'Join and sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong password' }).waitFor();
    await screenshot(page, '80-invite-existing-wrong-password');
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e.includes('status of 401'))).toBe(true);
    errors.splice(0);

    await page.getByLabel('Password').fill(person.password);
    await page.getByRole('button', { name: 'Join and sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await screenshot(page, '81-invite-existing-joined');
    const session = await page.context().request.get(`${env.apiUrl}/v1/authentication/session`);
    expect(((await session.json()) as { accountSid: string }).accountSid).toBe(inviterAccount);
    expect(errors).toEqual([]);
  });
});
