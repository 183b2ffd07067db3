import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser, openPage, screenshot } from '../helpers/browser.js';

const env = inject('browserEnv');

describe('the dashboard is served by the API listener', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('serves index.html with security headers, and deep links fall back to it', async () => {
    for (const p of ['/', '/stream?bucket=bkt_x&q=status:500', '/settings/members']) {
      const res = await fetch(env.apiUrl + p, { headers: { accept: 'text/html' } });
      expect(res.status, p).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toContain('<div id="root">');
    }
  });

  it('serves hashed assets precompressed with immutable caching', async () => {
    const html = await (await fetch(env.apiUrl + '/')).text();
    const js = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(js).toBeTruthy();
    const raw = await fetch(env.apiUrl + js!, { headers: { 'accept-encoding': 'identity' } });
    const rawLength = (await raw.arrayBuffer()).byteLength;
    expect(raw.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    // Node's fetch decodes bodies; the encoding header says what went over the wire.
    const br = await fetch(env.apiUrl + js!, { headers: { 'accept-encoding': 'br' } });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(br.headers.get('vary')?.toLowerCase()).toContain('accept-encoding');
    expect((await br.arrayBuffer()).byteLength).toBe(rawLength);
    const gz = await fetch(env.apiUrl + js!, { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    const missing = await fetch(env.apiUrl + '/assets/nope-123.js');
    expect(missing.status).toBe(404);
  });

  it('keeps the JSON envelope for API paths, never the dashboard page', async () => {
    // Authentication is decided on the matched route (docs/security.md): an unknown /v1 path is a
    // 404 envelope, a known one without a token a 401 envelope; neither is the dashboard page.
    const res = await fetch(env.apiUrl + '/v1/nope', { headers: { accept: 'text/html' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/json');
    const body = (await res.json()) as { success: boolean; error: { code: string } };
    expect(body).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });
    const known = await fetch(env.apiUrl + '/v1/authentication/me', { headers: { accept: 'text/html' } });
    expect(known.status).toBe(401);
    expect(known.headers.get('content-type')).toContain('application/json');
    expect(((await known.json()) as { error: { code: string } }).error.code).toBe('INVALID_TOKEN');
    const mcp = await fetch(env.apiUrl + '/healthz/nope', { headers: { accept: 'text/html' } });
    expect(mcp.status).toBe(404);
    expect(((await mcp.json()) as { error: { code: string } }).error.code).toBe('RESOURCE_NOT_FOUND');
  });

  it('loads in Chromium without console errors', async () => {
    const { page, context, errors } = await openPage(browser, env.apiUrl);
    await page.goto('/');
    await page.waitForSelector('h1');
    await screenshot(page, '00-first-load');
    expect(errors).toEqual([]);
    await context.close();
  });
});
