import { defineConfig } from 'vitest/config';
import { FirstRunFirstSequencer } from './test/helpers/sequencer.js';
import { testStackMode } from './test/helpers/stack-mode.js';

// The fault suite (test/faults, docs/reliability.md) kills and restarts real brokers for several
// minutes, so it is not part of the default run: it exists only when asked for by name
// (`npm run test:faults` = `vitest run --project faults`) or with TAPLINE_FAULTS=1.
const argv = process.argv.join(' ');
const faultsWanted = /--project[= ]\S*faults/.test(argv) || process.env.TAPLINE_FAULTS === '1';

// The first line of a run says where Kafka, Postgres and ClickHouse come from (TEST_STACK overrides).
const stackMode = testStackMode();
if (!process.env.VITEST_WORKER_ID) {
  console.log(
    `Test stack: ${stackMode.mode} (${stackMode.why}; TEST_STACK=containers|local chooses)` +
      (stackMode.mode === 'local' ? ': Kafka and Postgres from infra/local, ClickHouse chDB or server' : ''),
  );
}

export default defineConfig({
  test: {
    sequence: { sequencer: FirstRunFirstSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'services/**/*.test.ts'],
          environment: 'node',
          // Two files at a time; a test's own time bound is a guard against a hang, not a speed
          // check (speed is measured in `npm run bench`), so it allows for the other file's load.
          maxWorkers: 2,
          testTimeout: 30_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          environment: 'node',
          // One real stack (Kafka, Postgres, the service with chDB) for the whole run.
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          environment: 'node',
          // The dashboard in real Chromium against a stack of its own with an empty database.
          globalSetup: ['test/helpers/browser-setup.ts'],
          // Two files at a time (two Chromiums), each with accounts of its own; the first-run
          // journey goes first and the others wait for its first account (browser-first-run-gate).
          setupFiles: ['test/helpers/browser-first-run-gate.ts'],
          testTimeout: 180_000,
          hookTimeout: 240_000,
          // A page updates when its calls answer: a poll on what it shows waits up to 10 s (not
          // vitest's 1 s) for a machine busy with two browsers and the stack.
          expect: { poll: { timeout: 10_000, interval: 100 } },
          maxWorkers: 2,
          sequence: { groupOrder: 2 },
        },
      },
      {
        test: {
          name: 'scale',
          include: ['test/scale/**/*.test.ts'],
          environment: 'node',
          // The scaled deployment (docs/scaling.md): its own Kafka, Postgres, ClickHouse server and
          // nine role processes, so one file at a time, after the other projects.
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 3 },
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
      ...(faultsWanted
        ? [
            {
              test: {
                name: 'faults',
                include: ['test/faults/**/*.test.ts'],
                environment: 'node',
                // Each file starts its own Kafka + Postgres + two service processes: one file at a time.
                fileParallelism: false,
                maxWorkers: 1,
                sequence: { groupOrder: 4 },
                testTimeout: 600_000,
                hookTimeout: 300_000,
              },
            },
          ]
        : []),
    ],
  },
});
