import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sparticuz from '@sparticuz/chromium';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ROOT } from './service-process.js';

export const SCREENSHOT_DIR = path.join(ROOT, '.cache', 'screenshots');

/**
 * Real Chromium from the @sparticuz/chromium npm package (unpacked on first use), or the one at
 * CHROMIUM_PATH (e.g. Debian's /usr/bin/chromium).
 */
export async function launchBrowser(): Promise<Browser> {
  const own = process.env.CHROMIUM_PATH;
  return chromium.launch({
    executablePath: own ?? (await sparticuzPath()),
    args: own ? ['--no-sandbox'] : sparticuz.args,
    headless: true,
  });
}

/**
 * @sparticuz/chromium unpacks into `os.tmpdir()/chromium` and reuses what it finds there. Another
 * user's copy (e.g. root's, 0700) cannot be run, so this user then unpacks its own under a
 * temporary directory of its own.
 */
async function sparticuzPath(): Promise<string> {
  const shared = path.join(os.tmpdir(), 'chromium');
  try {
    if (fs.existsSync(shared)) fs.accessSync(shared, fs.constants.X_OK);
  } catch {
    const mine = path.join(os.tmpdir(), `tapline-chromium-${process.getuid?.() ?? 'user'}`);
    fs.mkdirSync(mine, { recursive: true, mode: 0o700 });
    process.env.TMPDIR = mine;
  }
  return sparticuz.executablePath();
}

export interface OpenedPage {
  page: Page;
  context: BrowserContext;
  /** console errors and uncaught page errors, for a test to assert there are none */
  errors: string[];
}

/**
 * A page in a fresh context (its own cookies). The locale is `en-US` unless `locale` is null: this
 * Chromium then reports its own, `en-US@posix`, which Intl refuses (the dashboard copes:
 * web/src/lib/locale-guard.ts, tested with it).
 */
/** Requests per hour a signed-in person may make on the browser tests' stack (SESSION_RATE_LIMIT). */
/** The browser file whose first test needs an empty database: the first-run page. */
export const FIRST_RUN_JOURNEY = 'test/browser/dashboard.test.ts';

export const SESSION_RATE_LIMIT = 2500;

/** The time zone of the pages openPage opens unless told otherwise. */
export const PAGE_TIME_ZONE = 'Europe/Berlin';

/** The calendar day of `ms` in the pages' time zone (YYYY-MM-DD). */
export function pageDay(ms: number): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: PAGE_TIME_ZONE }).format(ms);
}

export async function openPage(
  browser: Browser,
  baseURL: string,
  opts: { width?: number; height?: number; timezoneId?: string; locale?: string | null } = {},
): Promise<OpenedPage> {
  const context = await browser.newContext({
    baseURL,
    ...(opts.locale === null ? {} : { locale: opts.locale ?? 'en-US' }),
    timezoneId: opts.timezoneId ?? PAGE_TIME_ZONE,
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 720 },
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
  return { page, context, errors };
}

/** Saves `.cache/screenshots/<name>.png` (full page) and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** The CSRF token the dashboard sends with writes (from its readable cookie). */
export async function csrfToken(context: BrowserContext): Promise<string> {
  const c = (await context.cookies()).find((x) => x.name === 'tapline_csrf');
  return c ? decodeURIComponent(c.value) : '';
}

/** Signs in on the dashboard's sign-in page and waits for the overview it lands on. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto('/signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
}

/**
 * Relative luminance (0 black .. 1 white) of the page's background, from the computed colour of
 * <html> (the stylesheet's `:root`): tells which theme a page is drawn in.
 */
export async function backgroundLuminance(page: Page): Promise<number> {
  const rgb = await page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor');
  const [r, g, b] = (rgb.match(/[\d.]+/g) ?? ['0', '0', '0']).slice(0, 3).map((v) => {
    const c = Number(v) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}
