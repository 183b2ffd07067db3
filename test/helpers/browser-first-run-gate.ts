import pg from 'pg';
import { beforeAll, inject } from 'vitest';
import { FIRST_RUN_JOURNEY as JOURNEY } from './browser.js';

/**
 * Browser files run two at a time against one stack, but the dashboard's journey starts on the
 * first-run page, which exists only while the database holds no account. Every other browser file
 * waits here, before its own hooks create accounts, until that journey has created the first one
 * (when the journey is not part of the run, nobody waits).
 */

// Vitest reads a hook's first parameter as a fixture list and wants it destructured; none is used.
// eslint-disable-next-line no-empty-pattern
beforeAll(async ({}, suite) => {
  const env = inject('browserEnv');
  if (!env.firstRunJourney || suite.file.filepath.endsWith(JOURNEY)) return;
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
  try {
    const deadline = Date.now() + 240_000;
    for (;;) {
      const { rowCount } = await pool.query('SELECT 1 FROM accounts LIMIT 1');
      if (rowCount) return;
      if (Date.now() > deadline)
        throw new Error(`no account after 240 s: ${JOURNEY} did not pass its first-run step`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await pool.end();
  }
}, 250_000);
