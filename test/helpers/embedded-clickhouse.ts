import type { Config } from '../../services/shared/config.js';

/**
 * The ClickHouse settings of an embedded (chDB) database in `dir`, for tests and benches that open
 * their own engine beside the service's.
 */
export function embeddedClickHouse(dir: string): Config['clickhouse'] {
  return {
    url: undefined,
    path: dir,
    database: 'tapline',
    user: 'default',
    password: '',
    retentionDays: 30,
    mode: 'embedded',
    httpPort: 0,
    tcpPort: 0,
  };
}
