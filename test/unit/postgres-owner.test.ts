import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresHandle } from '../../infra/local/postgres.launcher.js';
import { freePort } from '../helpers/service-process.js';

/**
 * A second Tapline process started with the same DATA_DIR finds the first one's Postgres running.
 * While the launcher that started it lives, that Postgres is a live database: the second start
 * stops with a message naming the owner and how to share it, and the database keeps answering.
 * Once the owner is gone, the same Postgres is a leftover of a killed launch and is replaced.
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-pg-owner-'));
const log = pino({ level: 'silent' });
const handles: PostgresHandle[] = [];

afterAll(async () => {
  for (const h of handles) await h.stop();
  for (const h of handles)
    if (!h.pgdata.startsWith(dataDir)) fs.rmSync(path.dirname(h.pgdata), { recursive: true, force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('Postgres launcher: a DATA_DIR whose Postgres another live process owns', () => {
  it('refuses to stop a live owner’s database, and replaces one whose owner is gone', async () => {
    const port = await freePort();
    const first = await startPostgres({ dataDir, port, database: 'tapline', log });
    handles.push(first);
    expect(fs.readFileSync(path.join(dataDir, 'postgres.owner'), 'utf8').trim()).toBe(String(process.pid));

    // Another live process owns it (a stand-in process: the owner file names its pid).
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    fs.writeFileSync(path.join(dataDir, 'postgres.owner'), `${other.pid}\n`);
    const second = startPostgres({ dataDir, port: await freePort(), database: 'tapline', log });
    await expect(second).rejects.toThrow(`is in use by process ${other.pid}`);
    await expect(second).rejects.toThrow('DATABASE_URL=postgres://postgres:');
    const c = new pg.Client({ connectionString: first.url });
    await c.connect();
    expect((await c.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    await c.end();

    // The owner is gone: its Postgres is a leftover, stopped and started again by this launch.
    other.kill('SIGKILL');
    await new Promise((r) => other.once('exit', r));
    const third = await startPostgres({ dataDir, port: await freePort(), database: 'tapline', log });
    handles.push(third);
    expect(await first.exited).not.toBeUndefined();
    const c3 = new pg.Client({ connectionString: third.url });
    await c3.connect();
    expect((await c3.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    await c3.end();
  });
});
