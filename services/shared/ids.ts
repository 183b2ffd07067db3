import { randomFillSync } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const SID_BODY = 27;

/** Prefixes of every sid the service mints; the spec fixes acc_, xcl_, sv_, req_ and mcp_. */
export const SID_PREFIX = {
  account: 'acc_',
  user: 'usr_',
  session: 'ses_',
  apiToken: 'tok_',
  mcpToken: 'mcp_',
  bucket: 'bkt_',
  exclusion: 'xcl_',
  redaction: 'rdc_',
  event: 'evt_',
  workflow: 'wfl_',
  execution: 'wfx_',
  streamView: 'sv_',
  slo: 'slo_',
  endpointTemplate: 'ept_',
  request: 'req_',
  invite: 'inv_',
} as const;
export type SidKind = keyof typeof SID_PREFIX;

// Random bytes are drawn from the CSPRNG a pool at a time: one randomFillSync call per 4 KB
// instead of one randomBytes call (and a Buffer) per sid, which the ingest's profile showed on
// every record and every request (figures in bench/README.md).
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

function randomByte(): number {
  if (poolAt === POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  return POOL[poolAt++]!;
}

/** Random alphanumeric string; 27 chars of base62 carry ~160 bits. Rejection sampling keeps it unbiased. */
export function randomAlnum(length: number): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

export function newSid(kind: SidKind): string {
  return SID_PREFIX[kind] + randomAlnum(SID_BODY);
}

const SID_PATTERNS = Object.fromEntries(
  Object.entries(SID_PREFIX).map(([k, p]) => [k, new RegExp(`^${p}[A-Za-z0-9]{${SID_BODY}}$`)]),
) as Record<SidKind, RegExp>;

export function isSid(kind: SidKind, value: string): boolean {
  return SID_PATTERNS[kind].test(value);
}

export const ENVIRONMENT_SID = /^[a-z0-9]{6}$/;
