import pg from 'pg';
import { beforeAll, inject } from 'vitest';

/**
 * Browser files run two at a time against one stack, but the dashboard's journey starts on the
 * first-run page, which exists only while the database holds no account. Every other browser file
 * waits here, before its own hooks create accounts, until that journey has created the first one.
 */
const JOURNEY = 'test/browser/dashboard.test.ts';

// Vitest reads a hook's first parameter as a fixture list and wants it destructured; none is used.
// eslint-disable-next-line no-empty-pattern
beforeAll(async ({}, suite) => {
  if (suite.file.filepath.endsWith(JOURNEY)) return;
  const pool = new pg.Pool({ connectionString: inject('browserEnv').databaseUrl, max: 1 });
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
