import path from 'node:path';
import { Ajv } from 'ajv';
import type { FromSchema } from 'json-schema-to-ts';
import { validate as isValidCron } from 'node-cron';

/**
 * The one module that reads process.env (docs/architecture.md, convention 5). Parsed and checked once at import;
 * a bad value stops the process with a message naming the variable.
 */
const ROLE_NAMES = ['ingest', 'processor', 'actions', 'scheduler', 'api'] as const;
export type Role = (typeof ROLE_NAMES)[number];

const schema = {
  type: 'object',
  additionalProperties: true,
  properties: {
    NODE_ENV: { type: 'string', default: 'development' },
    ROLES: { type: 'string', default: ROLE_NAMES.join(','), pattern: '^(all|[a-z]+(,[a-z]+)*)$' },
    HOST: { type: 'string', default: '127.0.0.1' },
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 8080 },
    INGEST_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 8081 },
    PUBLIC_URL: { type: 'string' },
    CACHE_DIR: { type: 'string', default: '.cache' },
    DATA_DIR: { type: 'string' },
    LOG_LEVEL: {
      type: 'string',
      enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
    },
    LOG_PRETTY: { type: 'boolean' },
    KAFKA_BROKERS: { type: 'string', pattern: '^[^,\\s]+(,[^,\\s]+)*$' },
    KAFKA_PORT: { type: 'integer', minimum: 1, maximum: 65535, default: 9092 },
    KAFKA_CONTROLLER_PORT: { type: 'integer', minimum: 1, maximum: 65535, default: 9093 },
    KAFKA_HEAP_MB: { type: 'integer', minimum: 128, maximum: 8192, default: 512 },
    KAFKA_TOPIC_PARTITIONS: { type: 'integer', minimum: 1, maximum: 256, default: 4 },
    KAFKA_REQUESTS_PARTITIONS: { type: 'integer', minimum: 1, maximum: 256, default: 1 },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    PG_PORT: { type: 'integer', minimum: 1, maximum: 65535, default: 5433 },
    PG_POOL_SIZE: { type: 'integer', minimum: 1, maximum: 200, default: 10 },
    CLICKHOUSE_URL: { type: 'string', pattern: '^https?://' },
    CLICKHOUSE_MODE: { type: 'string', enum: ['embedded', 'server'], default: 'embedded' },
    CLICKHOUSE_HTTP_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 0 },
    CLICKHOUSE_TCP_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 0 },
    CLICKHOUSE_DATABASE: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', default: 'tapline' },
    CLICKHOUSE_USER: { type: 'string', default: 'default' },
    CLICKHOUSE_PASSWORD: { type: 'string', default: '' },
    CLICKHOUSE_CLUSTER: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$' },
    CLICKHOUSE_QUERY_MEMORY_BYTES: { type: 'integer', minimum: 1024 * 1024, default: 1024 ** 3 },
    CLICKHOUSE_EMBEDDED_MEMORY_BYTES: { type: 'integer', minimum: 0, default: 0 },
    RETENTION_DAYS: { type: 'integer', minimum: 1, maximum: 3650, default: 30 },
    INGEST_MAX_RECORDS: { type: 'integer', minimum: 1, maximum: 100000, default: 1000 },
    INGEST_MAX_BYTES: { type: 'integer', minimum: 1024, default: 5 * 1024 * 1024 },
    INGEST_PRODUCE_TIMEOUT_MS: { type: 'integer', minimum: 100, default: 5000 },
    INGEST_PROCESS: { type: 'string', enum: ['separate', 'inline'], default: 'separate' },
    INGEST_PROCESSES: { type: 'integer', minimum: 1, maximum: 64, default: 1 },
    INGEST_LINGER_MS: { type: 'integer', minimum: 0, maximum: 1000, default: 2 },
    PROCESSOR_FLUSH_MS: { type: 'integer', minimum: 1, maximum: 60000, default: 150 },
    PROCESSOR_HOLD_MS: { type: 'integer', minimum: 0, maximum: 600000, default: 1000 },
    PROCESSOR_MAX_BATCH: { type: 'integer', minimum: 1, maximum: 1000000, default: 20000 },
    PROCESSOR_FETCH_MIN_BYTES: {
      type: 'integer',
      minimum: 1,
      maximum: 16 * 1024 * 1024,
      default: 4 * 1024 * 1024,
    },
    PROCESSOR_FETCH_MAX_BYTES: {
      type: 'integer',
      minimum: 1024,
      maximum: 64 * 1024 * 1024,
      default: 16 * 1024 * 1024,
    },
    PROCESSOR_FRESHNESS_MS: { type: 'integer', minimum: 0, maximum: 600000, default: 800 },
    PROCESSOR_OVERLAP_STORE: { type: 'boolean', default: true },
    TLS_CERT: { type: 'string' },
    TLS_KEY: { type: 'string' },
    HSTS_MAX_AGE: { type: 'integer', minimum: 0, maximum: 63_072_000, default: 31_536_000 },
    SMTP_URL: { type: 'string', pattern: '^smtps?://' },
    SMTP_FROM: { type: 'string', default: 'Tapline <tapline@localhost>' },
    OUTBOUND_ALLOW: { type: 'string', default: '' },
    ACTION_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 120000, default: 10000 },
    ACTION_MAX_ATTEMPTS: { type: 'integer', minimum: 1, maximum: 20, default: 5 },
    ACTION_BACKOFF_MS: { type: 'integer', minimum: 1, maximum: 600000, default: 1000 },
    ACTION_CONCURRENCY: { type: 'integer', minimum: 1, maximum: 1000, default: 32 },
    SCHEDULER_THRESHOLD_CRON: { type: 'string', minLength: 9, default: '* * * * *' },
    SCHEDULER_SEAL_CRON: { type: 'string', minLength: 9, default: '*/5 * * * *' },
    RATE_LIMIT_STANDARD: { type: 'integer', minimum: 1, default: 1000 },
    RATE_LIMIT_PRO: { type: 'integer', minimum: 1, default: 10000 },
    RATE_LIMIT_ENTERPRISE: { type: 'integer', minimum: 1, default: 100000 },
    SESSION_RATE_LIMIT: { type: 'integer', minimum: 1, default: 20000 },
    RULES_RELOAD_MS: { type: 'integer', minimum: 1000, default: 60000 },
    DEMO_ACCOUNT: { type: 'boolean', default: true },
    SESSION_TTL_DAYS: { type: 'integer', minimum: 1, maximum: 3650, default: 30 },
    FAULT_CRASH_AFTER_INSERT: { type: 'boolean', default: false },
    HTTP_REQUEST_TIMEOUT_MS: { type: 'integer', minimum: 1000, maximum: 600000, default: 30000 },
    HTTP_CONNECTION_TIMEOUT_MS: { type: 'integer', minimum: 1000, maximum: 3600000, default: 120000 },
    INGEST_RATE_LIMIT_TOKEN: { type: 'integer', minimum: 1, default: 600000 },
    INGEST_RATE_LIMIT_BUCKET: { type: 'integer', minimum: 1, default: 600000 },
    MCP_RATE_LIMIT: { type: 'integer', minimum: 1, default: 120 },
    AUTH_LOOKUPS_PER_SECOND: { type: 'integer', minimum: 1, default: 500 },
    ACTION_RATE_LIMIT_WORKFLOW: { type: 'integer', minimum: 1, default: 100 },
    ACTION_RATE_LIMIT_ACCOUNT: { type: 'integer', minimum: 1, default: 1000 },
    // 32 bytes, as 64 hex digits or base64 (docs/security.md "Secrets at rest").
    SECRETS_KEY: { type: 'string', pattern: '^([0-9A-Fa-f]{64}|[A-Za-z0-9+/_-]{43}=?)$' },
    CHAT_HASH_KEY: { type: 'string', minLength: 32, maxLength: 1024 },
    METRICS_TOKEN: { type: 'string', minLength: 16, maxLength: 1024, pattern: '^[\\x21-\\x7e]+$' },
    METRICS_HOST: { type: 'string', default: '127.0.0.1' },
    METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 9464 },
    OIDC_ISSUER_URL: { type: 'string', pattern: '^https?://' },
    OIDC_CLIENT_ID: { type: 'string', minLength: 1, maxLength: 1024 },
    OIDC_CLIENT_SECRET: { type: 'string', minLength: 1, maxLength: 4096 },
    OIDC_REDIRECT_URL: { type: 'string', pattern: '^https?://' },
    OIDC_PROVIDER_NAME: { type: 'string', minLength: 1, maxLength: 60, default: 'SSO' },
    OIDC_SCOPES: { type: 'string', default: 'openid email profile' },
    OIDC_ALLOWED_DOMAINS: { type: 'string', default: '' },
    OIDC_ROLE_CLAIM: { type: 'string', minLength: 1, maxLength: 200, default: 'groups' },
    OIDC_ROLE_MAP: { type: 'string', default: '' },
    OIDC_DEFAULT_ROLE: { type: 'string', enum: ['administrator', 'admin', 'user', 'none'], default: 'user' },
    OIDC_ACCOUNT: { type: 'string', pattern: '^acc_[A-Za-z0-9]{27}$' },
    OIDC_ONLY: { type: 'boolean', default: false },
  },
} as const;

/** The environment as the schema validates it: defaults applied, integers and booleans coerced. */
type Env = FromSchema<typeof schema>;

export interface Config {
  nodeEnv: string;
  roles: Set<Role>;
  host: string;
  port: number;
  ingestPort: number;
  publicUrl: string | undefined;
  cacheDir: string;
  dataDir: string;
  logLevel: Env['LOG_LEVEL'];
  logPretty: boolean;
  kafka: {
    brokers: string[] | undefined;
    port: number;
    controllerPort: number;
    heapMb: number;
    /** partitions of workflow.actions when created */
    partitions: number;
    /**
     * partitions of traffic.requests when created: how many processor replicas can share the
     * work. One processor inserts one block per partition, and a ClickHouse insert's cost per
     * record falls as its block grows (the materialized views; test/bench/ch-decompose.ts
     * measures it), so one partition per processor makes the largest blocks.
     */
    requestsPartitions: number;
  };
  postgres: { url: string | undefined; port: number; poolSize: number };
  clickhouse: {
    url: string | undefined;
    /**
     * `embedded`: chDB inside the process (the default of `npm start`); `server`: a ClickHouse
     * server, CLICKHOUSE_URL or, without it, one the local stack starts (ports 0 = free ones).
     */
    mode: Env['CLICKHOUSE_MODE'];
    httpPort: number;
    tcpPort: number;
    path: string;
    database: string;
    user: string;
    password: string;
    /** a cluster of remote_servers: the migrations create Replicated tables ON CLUSTER (docs/scaling.md) */
    cluster?: string | undefined;
    /**
     * Embedded mode: the memory the chDB engine may hold in all (`max_server_memory_usage`); an
     * insert, merge or read that would go past it fails instead of growing the process. 0: the
     * engine's own bound (0.9 of the machine's memory).
     */
    embeddedMemoryBytes?: number;
    retentionDays: number;
  };
  ingest: {
    maxRecords: number;
    maxBytes: number;
    produceTimeoutMs: number;
    lingerMs: number;
    /** with other roles in the process: run the ingest listener in a child process of its own */
    process: Env['INGEST_PROCESS'];
    /** ingest worker processes when separate (they share the port) */
    processes: number;
  };
  processor: {
    flushMs: number;
    maxBatch: number;
    /** a fetch waits for this many bytes or flushMs, whichever comes first */
    fetchMinBytes: number;
    /** longest fetched messages are held for later fetches to join their block (times the group's size while busy) */
    holdMs: number;
    /** most bytes a fetch returns of one partition; a fetch behind the partition's end is joined by the next */
    fetchMaxBytes: number;
    /**
     * The freshness a hold may cost (ms from a message's Kafka timestamp to its stored block): held
     * messages are stored once the oldest is this old less the recent stores' time, unless the
     * partition is still a fetch or more behind (0: no such bound).
     */
    freshnessMs: number;
    /**
     * true: a fetch is stored while the broker gathers the next one (committed only once stored);
     * false: stored before the next fetch is asked for
     */
    overlapStore: boolean;
    crashAfterInsert: boolean;
  };
  tls: { cert: string; key: string } | undefined;
  /** Strict-Transport-Security max-age (s) on answers over HTTPS */
  hstsMaxAge: number;
  smtp: { url: string | undefined; from: string };
  actions: {
    outboundAllow: string[];
    timeoutMs: number;
    maxAttempts: number;
    backoffMs: number;
    concurrency: number;
    /** workflow executions started per minute per workflow and per account; the rest are `skipped` */
    perWorkflowPerMinute: number;
    perAccountPerMinute: number;
  };
  /**
   * thresholdCron: threshold, slo_burn and regression triggers; sealCron: the consumer rollup's
   * seal (consumer-seal.ts)
   */
  scheduler: { thresholdCron: string; sealCron: string };
  /** requests per hour: per account by plan (API tokens), per person (dashboard sessions) */
  rateLimits: { standard: number; pro: number; enterprise: number; session: number };
  rulesReloadMs: number;
  demoAccount: boolean;
  /** dashboard sessions expire after this many days without use (sliding) */
  sessionTtlDays: number;
  /** bounds on work per request, token and bucket (docs/security.md "Limits") */
  limits: {
    /** longest a request may take to arrive (headers and body) */
    httpRequestTimeoutMs: number;
    /** an idle connection is closed after this long */
    httpConnectionTimeoutMs: number;
    /** ingest calls per minute per token, and per bucket */
    ingestPerToken: number;
    ingestPerBucket: number;
    /** /mcp requests per minute per MCP token */
    mcpPerToken: number;
    /** Postgres look-ups per second of tokens not in the credential cache */
    authLookupsPerSecond: number;
    /**
     * Most memory one ClickHouse read of the API, /mcp or the scheduler may take (its
     * `max_memory_usage`); a read that needs more is refused with a 400.
     */
    queryMemoryBytes: number;
  };
  /**
   * SECRETS_KEY: the AES-256-GCM key of secrets stored in Postgres (workflow action URLs and
   * headers); unset: generated once and kept in DATA_DIR (secret-box.ts). CHAT_HASH_KEY: the HMAC
   * key of the chat widget's user hash; unset: derived from the secrets key.
   */
  secrets: { key: string | undefined; chatHashKey: string | undefined };
  /**
   * Prometheus metrics of the process (docs/operations.md): `GET /metrics` on the API and ingest
   * listeners, and a listener of its own (`host`:`port`, 0 = none) in a process without either.
   * `token`: the bearer token `/metrics` asks for everywhere; unset, the API and ingest listeners
   * answer it only to loopback clients and the metrics listener to anyone who reaches its address.
   */
  metrics: { token: string | undefined; host: string; port: number };
  /** OpenID Connect sign-in (docs/auth.md "Single sign-on (OpenID Connect)"); undefined = off */
  oidc: OidcConfig | undefined;
}

export type MemberRole = 'administrator' | 'user';

export interface OidcConfig {
  issuerUrl: string;
  clientId: string;
  clientSecret: string | undefined;
  /** where the provider sends the person back; registered with the provider */
  redirectUrl: string;
  /** shown on the sign-in page: "Sign in with <providerName>" */
  providerName: string;
  scopes: string;
  /** lower-case email domains allowed to sign in; empty = any */
  allowedDomains: string[];
  /** the claim (ID token or userinfo) whose value or values choose the role */
  roleClaim: string;
  /** claim value -> role; the highest role any value maps to wins */
  roleMap: Map<string, MemberRole>;
  /** role of a person whose claim maps to nothing; null = refused */
  defaultRole: MemberRole | null;
  /** the account first sign-ins join; undefined = the oldest account */
  accountSid: string | undefined;
  /** password sign-in refused, the password form hidden */
  only: boolean;
}

export class ConfigError extends Error {}

export function parseConfig(env: NodeJS.ProcessEnv): Config {
  const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true });
  const validate = ajv.compile(schema);
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(schema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  if (!validate(raw)) {
    const msg = (validate.errors ?? [])
      .map((e) => `${e.instancePath.replace(/^\//, '') || '(env)'} ${e.message ?? 'is invalid'}`)
      .join('; ');
    throw new ConfigError(`Invalid environment: ${msg}`);
  }
  const v = raw as Env;

  const roleList = v.ROLES === 'all' ? [...ROLE_NAMES] : v.ROLES.split(',');
  for (const role of roleList) {
    if (!(ROLE_NAMES as readonly string[]).includes(role)) {
      throw new ConfigError(
        `Invalid environment: ROLES names unknown role "${role}" (known: ${ROLE_NAMES.join(', ')})`,
      );
    }
  }
  const cacheDir = path.resolve(v.CACHE_DIR);
  const dataDir = path.resolve(v.DATA_DIR ?? path.join(cacheDir, 'data'));
  const cert = v.TLS_CERT;
  const key = v.TLS_KEY;
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError('Invalid environment: TLS_CERT and TLS_KEY must be set together');
  }
  for (const name of ['SCHEDULER_THRESHOLD_CRON', 'SCHEDULER_SEAL_CRON'] as const) {
    if (!isValidCron(v[name]))
      throw new ConfigError(`Invalid environment: ${name} is not a valid cron pattern`);
  }
  const brokers = v.KAFKA_BROKERS;
  const oidc = parseOidc(v);
  return {
    nodeEnv: v.NODE_ENV,
    roles: new Set(roleList as Role[]),
    host: v.HOST,
    port: v.PORT,
    ingestPort: v.INGEST_PORT,
    publicUrl: v.PUBLIC_URL,
    cacheDir,
    dataDir,
    logLevel: v.LOG_LEVEL,
    // Human-readable lines for a person at a terminal, JSON lines for everything else.
    logPretty: v.LOG_PRETTY === undefined ? Boolean(process.stdout.isTTY) : v.LOG_PRETTY,
    kafka: {
      brokers: brokers ? brokers.split(',') : undefined,
      port: v.KAFKA_PORT,
      controllerPort: v.KAFKA_CONTROLLER_PORT,
      heapMb: v.KAFKA_HEAP_MB,
      partitions: v.KAFKA_TOPIC_PARTITIONS,
      requestsPartitions: v.KAFKA_REQUESTS_PARTITIONS,
    },
    postgres: { url: v.DATABASE_URL, port: v.PG_PORT, poolSize: v.PG_POOL_SIZE },
    clickhouse: {
      url: v.CLICKHOUSE_URL,
      mode: v.CLICKHOUSE_URL ? 'server' : v.CLICKHOUSE_MODE,
      httpPort: v.CLICKHOUSE_HTTP_PORT,
      tcpPort: v.CLICKHOUSE_TCP_PORT,
      path: path.join(dataDir, 'chdb'),
      database: v.CLICKHOUSE_DATABASE,
      user: v.CLICKHOUSE_USER,
      password: v.CLICKHOUSE_PASSWORD,
      cluster: v.CLICKHOUSE_CLUSTER,
      embeddedMemoryBytes: v.CLICKHOUSE_EMBEDDED_MEMORY_BYTES,
      retentionDays: v.RETENTION_DAYS,
    },
    ingest: {
      maxRecords: v.INGEST_MAX_RECORDS,
      maxBytes: v.INGEST_MAX_BYTES,
      produceTimeoutMs: v.INGEST_PRODUCE_TIMEOUT_MS,
      lingerMs: v.INGEST_LINGER_MS,
      process: v.INGEST_PROCESS,
      processes: v.INGEST_PROCESSES,
    },
    processor: {
      flushMs: v.PROCESSOR_FLUSH_MS,
      holdMs: v.PROCESSOR_HOLD_MS,
      maxBatch: v.PROCESSOR_MAX_BATCH,
      fetchMinBytes: v.PROCESSOR_FETCH_MIN_BYTES,
      fetchMaxBytes: v.PROCESSOR_FETCH_MAX_BYTES,
      freshnessMs: v.PROCESSOR_FRESHNESS_MS,
      overlapStore: v.PROCESSOR_OVERLAP_STORE,
      crashAfterInsert: v.FAULT_CRASH_AFTER_INSERT,
    },
    tls: cert && key ? { cert, key } : undefined,
    hstsMaxAge: v.HSTS_MAX_AGE,
    smtp: { url: v.SMTP_URL, from: v.SMTP_FROM },
    actions: {
      outboundAllow: v.OUTBOUND_ALLOW.split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      timeoutMs: v.ACTION_TIMEOUT_MS,
      maxAttempts: v.ACTION_MAX_ATTEMPTS,
      backoffMs: v.ACTION_BACKOFF_MS,
      concurrency: v.ACTION_CONCURRENCY,
      perWorkflowPerMinute: v.ACTION_RATE_LIMIT_WORKFLOW,
      perAccountPerMinute: v.ACTION_RATE_LIMIT_ACCOUNT,
    },
    scheduler: { thresholdCron: v.SCHEDULER_THRESHOLD_CRON, sealCron: v.SCHEDULER_SEAL_CRON },
    rateLimits: {
      standard: v.RATE_LIMIT_STANDARD,
      pro: v.RATE_LIMIT_PRO,
      enterprise: v.RATE_LIMIT_ENTERPRISE,
      session: v.SESSION_RATE_LIMIT,
    },
    rulesReloadMs: v.RULES_RELOAD_MS,
    demoAccount: v.DEMO_ACCOUNT,
    sessionTtlDays: v.SESSION_TTL_DAYS,
    limits: {
      httpRequestTimeoutMs: v.HTTP_REQUEST_TIMEOUT_MS,
      httpConnectionTimeoutMs: v.HTTP_CONNECTION_TIMEOUT_MS,
      ingestPerToken: v.INGEST_RATE_LIMIT_TOKEN,
      ingestPerBucket: v.INGEST_RATE_LIMIT_BUCKET,
      mcpPerToken: v.MCP_RATE_LIMIT,
      authLookupsPerSecond: v.AUTH_LOOKUPS_PER_SECOND,
      queryMemoryBytes: v.CLICKHOUSE_QUERY_MEMORY_BYTES,
    },
    secrets: { key: v.SECRETS_KEY, chatHashKey: v.CHAT_HASH_KEY },
    metrics: { token: v.METRICS_TOKEN, host: v.METRICS_HOST, port: v.METRICS_PORT },
    oidc,
  };
}

const roleName = (r: string): MemberRole | null =>
  r === 'admin' || r === 'administrator' ? 'administrator' : r === 'user' ? 'user' : null;

/**
 * OIDC_ROLE_MAP: `value=role` pairs separated by commas (`tapline-admins=admin,devs=user`), or a
 * JSON object (`{"Tapline Admins": "administrator"}`) for values that hold `=` or `,`. Roles are
 * `administrator` (or `admin`) and `user`.
 */
export function parseRoleMap(text: string): Map<string, MemberRole> {
  const map = new Map<string, MemberRole>();
  const trimmed = text.trim();
  if (!trimmed) return map;
  let pairs: [string, unknown][];
  if (trimmed.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new ConfigError('Invalid environment: OIDC_ROLE_MAP is not valid JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new ConfigError('Invalid environment: OIDC_ROLE_MAP as JSON must be an object of value: role');
    pairs = Object.entries(parsed);
  } else {
    pairs = trimmed.split(',').map((pair) => {
      const at = pair.lastIndexOf('=');
      if (at < 1)
        throw new ConfigError(`Invalid environment: OIDC_ROLE_MAP entry "${pair.trim()}" is not value=role`);
      return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
    });
  }
  for (const [value, role] of pairs) {
    const r = typeof role === 'string' ? roleName(role.trim()) : null;
    if (!r)
      throw new ConfigError(
        `Invalid environment: OIDC_ROLE_MAP maps "${value}" to ${JSON.stringify(role)}; roles are administrator (or admin) and user`,
      );
    map.set(value, r);
  }
  return map;
}

/** The OIDC settings, or undefined when no OIDC variable is set (the feature is off). */
function parseOidc(v: Env): OidcConfig | undefined {
  const issuer = v.OIDC_ISSUER_URL;
  const clientId = v.OIDC_CLIENT_ID;
  if (!issuer && !clientId && !v.OIDC_CLIENT_SECRET && !v.OIDC_ONLY) return undefined;
  if (!issuer || !clientId)
    throw new ConfigError(
      'Invalid environment: OpenID Connect sign-in needs both OIDC_ISSUER_URL and OIDC_CLIENT_ID (OIDC_ONLY or OIDC_CLIENT_SECRET alone turns nothing on)',
    );
  const issuerUrl = new URL(issuer);
  // Plain HTTP only to a provider on this machine (a local test provider): elsewhere the code,
  // the client secret and the tokens would cross the network in clear.
  if (issuerUrl.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(issuerUrl.hostname))
    throw new ConfigError('Invalid environment: OIDC_ISSUER_URL must be https (http only for localhost)');
  const scheme = v.TLS_CERT ? 'https' : 'http';
  const base = (
    v.PUBLIC_URL ?? `${scheme}://${v.HOST === '0.0.0.0' ? '127.0.0.1' : v.HOST}:${v.PORT}`
  ).replace(/\/+$/, '');
  const scopes = v.OIDC_SCOPES.split(/[\s,]+/).filter(Boolean);
  if (!scopes.includes('openid')) scopes.unshift('openid');
  if (!scopes.includes('email')) scopes.push('email');
  const defaultRole = v.OIDC_DEFAULT_ROLE === 'none' ? null : roleName(v.OIDC_DEFAULT_ROLE);
  return {
    issuerUrl: issuer,
    clientId,
    clientSecret: v.OIDC_CLIENT_SECRET,
    redirectUrl: v.OIDC_REDIRECT_URL ?? `${base}/v1/authentication/oidc/callback`,
    providerName: v.OIDC_PROVIDER_NAME,
    scopes: scopes.join(' '),
    allowedDomains: v.OIDC_ALLOWED_DOMAINS.split(',')
      .map((d) => d.trim().toLowerCase().replace(/^@/, ''))
      .filter(Boolean),
    roleClaim: v.OIDC_ROLE_CLAIM,
    roleMap: parseRoleMap(v.OIDC_ROLE_MAP),
    defaultRole,
    accountSid: v.OIDC_ACCOUNT,
    only: v.OIDC_ONLY,
  };
}

let cached: Config | undefined;
/** The process configuration, parsed on first use. */
export function config(): Config {
  cached ??= parseConfig(process.env);
  return cached;
}

/** Names of every variable, for the README check and `--help`. */
export const CONFIG_VARIABLES = Object.keys(schema.properties);

/** The environment of a child process of this service: ours plus `overrides`. */
export function childEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}

/**
 * One environment variable a settings file references as `${NAME}` (docs/settings-as-code.md):
 * a secret the file leaves out, not configuration of the process, so it is not parsed above.
 */
export function environmentVariable(name: string): string | undefined {
  return process.env[name];
}
