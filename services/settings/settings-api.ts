import { createClient } from '@clickhouse/client';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { ALL_SCOPES, SESSION_ONLY_SCOPES } from '../../schemas/scopes.js';
import { ApiTokensRepository } from '../api/tokens/api-tokens.repository.js';
import { buildApp } from '../api/app.js';
import { createClickHouse } from '../shared/clickhouse.js';
import type { Config } from '../shared/config.js';
import { CredentialStore } from '../shared/credentials.js';
import type { Logger } from '../shared/logger.js';

/** A JSON object as the API answers it and as the settings document holds it. */
export type Obj = Record<string, unknown>;

/** A refusal of the file or of the API, printed as is by the admin command. */
export class SettingsError extends Error {}

interface Answer {
  status: number;
  body: Obj;
}

/** The API of one account, called in-process with a temporary all-scope API token. */
export class SettingsApi {
  private constructor(
    private readonly app: FastifyInstance,
    private readonly token: string,
    private readonly tokenSid: string,
    private readonly pool: pg.Pool,
    readonly accountSid: string,
  ) {}

  static async open(pool: pg.Pool, cfg: Config, log: Logger, accountSid: string): Promise<SettingsApi> {
    const acct = await pool.query('SELECT 1 FROM accounts WHERE sid = $1', [accountSid]);
    if (!acct.rowCount) throw new SettingsError(`no account ${accountSid}`);
    // The settings routes never read ClickHouse (buckets are never deleted here): with an embedded
    // chDB, which only the service's process may open, the client is one that is never connected.
    const ch = cfg.clickhouse.url
      ? createClickHouse(cfg.clickhouse)
      : createClient({ url: 'http://clickhouse.invalid' });
    const app = await buildApp({
      cfg,
      log,
      pg: pool,
      ch,
      credentials: new CredentialStore(pool, log, 30_000, 0, cfg.limits.authLookupsPerSecond),
      ready: async () => ({}),
    });
    const scopes = ALL_SCOPES.filter((s) => !(SESSION_ONLY_SCOPES as readonly string[]).includes(s));
    const token = await new ApiTokensRepository(pool).create(accountSid, {
      name: 'settings as code (admin)',
      description: 'temporary token of npm run admin -- export/apply; deleted when the command ends',
      scopes: [...scopes],
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    return new SettingsApi(app, token.token!, token.sid, pool, accountSid);
  }

  async close(): Promise<void> {
    await this.pool.query('DELETE FROM api_tokens WHERE sid = $1', [this.tokenSid]);
    await this.app.close();
  }

  async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown): Promise<Answer> {
    const res = await this.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${this.token}` },
      ...(body === undefined ? {} : { payload: body as Obj }),
    });
    return { status: res.statusCode, body: res.body ? (JSON.parse(res.body) as Obj) : {} };
  }

  /** Every record of a list endpoint (all pages). */
  async list(path: string): Promise<Obj[]> {
    const out: Obj[] = [];
    for (let page = 1; ; page++) {
      const sep = path.includes('?') ? '&' : '?';
      const r = await this.call('GET', `${path}${sep}limit=100&page=${page}`);
      if (r.status !== 200) throw apiError(`GET ${path}`, r);
      out.push(...((r.body.records as Obj[]) ?? []));
      if (!r.body.hasMore) return out;
    }
  }

  get base(): string {
    return `/v1/accounts/${this.accountSid}`;
  }
}

/** A refused API call as the error the admin command prints, with the API's details. */
export function apiError(what: string, r: Answer): SettingsError {
  const e = (r.body.error ?? {}) as { code?: string; message?: string; details?: Obj };
  const details = Object.entries(e.details ?? {})
    .map(([k, v]) => `\n  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('');
  return new SettingsError(`${what}: ${r.status} ${e.code ?? ''}: ${e.message ?? 'refused'}${details}`);
}
