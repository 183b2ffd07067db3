import { buildWebIfChanged } from '../../infra/web-build.js';
import type { TestProject } from 'vitest/node';
import { FIRST_RUN_JOURNEY, SESSION_RATE_LIMIT } from './browser.js';
import { ROOT } from './service-process.js';
import { startTestStack, type TestStack } from './test-stack.js';

export interface BrowserEnv {
  apiUrl: string;
  ingestUrl: string;
  databaseUrl: string;
  /** the stack's Kafka, for a test that starts a service of its own beside it */
  kafkaBrokers: string[];
  dataDir: string;
  serviceLog: string;
  /**
   * Whether the first-run journey (test/browser/dashboard.test.ts) is among the files of this run:
   * only then do the other browser files wait for it (browser-first-run-gate.ts).
   */
  firstRunJourney: boolean;
}

/**
 * Whether vitest's command line runs the journey: no file filter, or one that matches its path
 * (vitest keeps the files whose path contains a filter). Filters are the arguments that look like
 * paths; option values such as `--project browser` do not.
 */
function journeyInRun(argv: string[]): boolean {
  const filters = argv.filter((a) => !a.startsWith('-') && /[/.]/.test(a));
  return filters.length === 0 || filters.some((f) => FIRST_RUN_JOURNEY.includes(f.replace(/^\.\//, '')));
}

declare module 'vitest' {
  export interface ProvidedContext {
    browserEnv: BrowserEnv;
  }
}

let stack: TestStack | undefined;

/**
 * The dashboard's browser tests get a stack of their own with an EMPTY database (no demo
 * account), so the first-run page is what a new user sees; the web app is built first so the
 * tests always see the current code.
 */
export async function setup(project: TestProject): Promise<void> {
  // NOTE: NODE_ENV=production as for `npm start`: under vitest it is `test`, which makes Vite bundle
  // React's development build (StrictMode double effects, dev-only warnings) instead of the real one.
  // Built only when web/ changed since the last build (infra/web-build.ts), as `npm start` does.
  buildWebIfChanged(ROOT, { quiet: true, env: { ...process.env, NODE_ENV: 'production' } });
  // A signed-in person's own bound, low enough that a test can reach it (investigate.test.ts) and
  // far above what a person's pages call in the whole browser run.
  stack = await startTestStack('browser', {
    DEMO_ACCOUNT: 'false',
    SESSION_RATE_LIMIT: String(SESSION_RATE_LIMIT),
  });
  project.provide('browserEnv', {
    apiUrl: stack.service.apiUrl,
    ingestUrl: stack.service.ingestUrl,
    databaseUrl: stack.stack.databaseUrl,
    kafkaBrokers: stack.stack.kafkaBrokers,
    dataDir: stack.runDir,
    serviceLog: stack.serviceLog,
    firstRunJourney: journeyInRun(process.argv.slice(2)),
  });
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
