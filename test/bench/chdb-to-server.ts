/**
 * Turns a kept embedded bench stack (`--data-dir SRC`, chDB) into a server-mode one (`DEST`), so
 * the query phase can time the same loaded set in both ClickHouse modes without loading it twice
 * (a 100M-record load takes the better part of an hour on a 2-core machine):
 *
 *   npx tsx test/bench/chdb-to-server.ts .cache/q100m .cache/q100m-server
 *   npm run bench -- --only query --clickhouse server --data-dir .cache/q100m-server …
 *
 * The ClickHouse server of server mode is the same engine as chDB (infra/local/
 * clickhouse-server.launcher.ts), so it opens the chDB directory as it is. What differs is the
 * database: chDB keeps the service's tables in `default`, a server in `tapline`
 * (services/shared/clickhouse.ts). The server here, on DEST's copy, renames every table into
 * `tapline` (a metadata change: the parts stay where they are) and creates the materialized views
 * again there, their `default.` names replaced by `tapline.`, since a view's query keeps the
 * names it was created with.
 *
 * The chDB parts are hard links (parts are never written in place: merges and mutations write new
 * parts), Postgres and Kafka real copies (both write their files in place). SRC stays usable.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { startClickHouseServer } from '../../infra/local/clickhouse-server.launcher.js';
import { freePort } from '../helpers/service-process.js';

const [src, dest] = process.argv.slice(2);
if (!src || !dest) {
  console.error('usage: npx tsx test/bench/chdb-to-server.ts SRC_DATA_DIR DEST_DATA_DIR');
  process.exit(2);
}
if (fs.existsSync(dest)) {
  console.error(`${dest} exists; give a new folder`);
  process.exit(2);
}
if (!fs.existsSync(path.join(src, 'chdb'))) {
  console.error(`${src} holds no chdb folder (an embedded bench data directory)`);
  process.exit(2);
}

fs.mkdirSync(dest, { recursive: true });
for (const entry of fs.readdirSync(src)) {
  if (entry === 'chdb' || entry === 'service.log') continue;
  execFileSync('cp', ['-a', path.join(src, entry), path.join(dest, entry)]);
}
execFileSync('cp', ['-al', path.join(src, 'chdb'), path.join(dest, 'clickhouse-server')]);

const log = pino({ level: 'warn' });
const server = await startClickHouseServer({
  cacheDir: path.resolve('.cache'),
  dataDir: path.resolve(dest, 'clickhouse-server'),
  httpPort: await freePort(),
  tcpPort: await freePort(),
  log,
});

async function sql(query: string): Promise<string> {
  const res = await fetch(server.url, { method: 'POST', body: query });
  const text = await res.text();
  if (!res.ok) throw new Error(`${query.slice(0, 80)}: ${text}`);
  return text;
}
const lines = (s: string) => s.split('\n').filter(Boolean);

try {
  await sql('CREATE DATABASE IF NOT EXISTS tapline');
  const views = lines(
    await sql(`SELECT name FROM system.tables WHERE database = 'default' AND engine = 'MaterializedView'`),
  );
  const creates: string[] = [];
  for (const v of views) {
    creates.push(
      (await sql(`SHOW CREATE TABLE default.${v} FORMAT TSVRaw`)).replaceAll('default.', 'tapline.'),
    );
    await sql(`DROP VIEW default.${v}`);
  }
  const tables = lines(await sql(`SELECT name FROM system.tables WHERE database = 'default'`));
  for (const t of tables) await sql(`RENAME TABLE default.${t} TO tapline.${t}`);
  for (const c of creates) await sql(c);
  const rows = (await sql(`SELECT count() FROM tapline.requests`)).trim();
  console.log(
    `${dest}: ${tables.length} tables and ${views.length} views in database tapline; requests holds ${rows} rows`,
  );
} finally {
  await server.stop();
}
