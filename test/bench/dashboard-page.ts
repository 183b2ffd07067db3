/**
 * The dashboard's own figures (issue: speed of the dashboard), no stack needed:
 * - initial JS + CSS of `web/dist` as the browser downloads it (the files index.html references),
 *   raw, gzip and brotli (the precompressed siblings the API serves);
 * - a uPlot chart of 1,500 points × 6 series drawn in real Chromium: the time from `new uPlot`
 *   to the end of its first draw, median and p95 of 30 draws (a fresh chart each time).
 * Run: `npx tsx test/bench/dashboard-page.ts` (after `npm run build:web`); bench.ts runs it as the
 * `dashboard` phase. Prints one JSON object.
 */
import fs from 'node:fs';
import path from 'node:path';
import sparticuz from '@sparticuz/chromium';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const DIST = path.join(ROOT, 'web', 'dist');

export interface DashboardPageResult {
  initialAssets: string[];
  rawBytes: number;
  gzipBytes: number;
  brotliBytes: number;
  chart: { points: number; series: number; draws: number; medianMs: number; p95Ms: number };
}

function assetSizes(): Pick<DashboardPageResult, 'initialAssets' | 'rawBytes' | 'gzipBytes' | 'brotliBytes'> {
  const html = fs.readFileSync(path.join(DIST, 'index.html'), 'utf8');
  const refs = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
  const size = (f: string) => fs.statSync(path.join(DIST, f)).size;
  return {
    initialAssets: refs,
    rawBytes: refs.reduce((s, r) => s + size(r), 0),
    gzipBytes: refs.reduce((s, r) => s + size(`${r}.gz`), 0),
    brotliBytes: refs.reduce((s, r) => s + size(`${r}.br`), 0),
  };
}

async function chartDraw(
  points: number,
  series: number,
  draws: number,
): Promise<DashboardPageResult['chart']> {
  const executablePath = process.env.CHROMIUM_PATH ?? (await sparticuz.executablePath());
  const browser = await chromium.launch({
    executablePath,
    args: process.env.CHROMIUM_PATH ? ['--no-sandbox'] : sparticuz.args,
    headless: true,
  });
  try {
    // NOTE: an explicit locale: Chromium takes the process's (e.g. en-US@posix), which Intl refuses.
    const page = await browser.newPage({ viewport: { width: 1280, height: 720 }, locale: 'en-US' });
    await page.setContent('<div id="c" style="width:1200px"></div>');
    await page.addStyleTag({ path: path.join(ROOT, 'node_modules', 'uplot', 'dist', 'uPlot.min.css') });
    await page.addScriptTag({ path: path.join(ROOT, 'node_modules', 'uplot', 'dist', 'uPlot.iife.min.js') });
    // Plain JavaScript run in the page (the project's type-check has no DOM library).
    const times = (await page.evaluate(`(async () => {
      const points = ${points}, series = ${series}, draws = ${draws};
      const now = Math.floor(Date.now() / 1000);
      const x = Array.from({ length: points }, (_, i) => now - (points - i) * 60);
      const ys = Array.from({ length: series }, (_, s) =>
        x.map((_, i) => 100 + 50 * Math.sin(i / (20 + s)) + Math.random() * 20 * (s + 1)));
      const el = document.getElementById('c');
      const out = [];
      for (let d = 0; d < draws; d++) {
        const t0 = performance.now();
        let drawn = 0;
        const u = new uPlot({
          width: 1200, height: 240,
          series: [{}, ...ys.map((_, s) => ({ label: 's' + s, stroke: 'hsl(' + s * 60 + ',70%,45%)', width: 1.5 }))],
          hooks: { draw: [() => (drawn = performance.now())] },
        }, [x, ...ys], el);
        // The first draw happens in a microtask after construction; wait for it and a frame.
        await new Promise((r) => requestAnimationFrame(() => r(null)));
        out.push((drawn || performance.now()) - t0);
        u.destroy();
      }
      return out;
    })()`)) as number[];
    times.sort((a, b) => a - b);
    const q = (p: number) =>
      Math.round(times[Math.min(times.length - 1, Math.floor(p * times.length))]! * 10) / 10;
    return { points, series, draws, medianMs: q(0.5), p95Ms: q(0.95) };
  } finally {
    await browser.close();
  }
}

export async function measureDashboardPage(): Promise<DashboardPageResult> {
  if (!fs.existsSync(path.join(DIST, 'index.html')))
    throw new Error('web/dist is missing: run npm run build:web');
  return { ...assetSizes(), chart: await chartDraw(1500, 6, 30) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  measureDashboardPage().then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (err: Error) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
