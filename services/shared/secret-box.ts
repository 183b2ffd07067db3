import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import { logger } from './logger.js';

/**
 * Secrets at rest (docs/security.md "Secrets at rest"): AES-256-GCM with a 96-bit random IV per
 * value, through node:crypto. A sealed value is a string `tlenc:v1:<iv>.<tag>.<ciphertext>`
 * (base64url), so it fits where the plain string was (a JSON field) and a value stored before
 * encryption existed (no prefix) is read as it is.
 */
const PREFIX = 'tlenc:v1:';
const KEY_FILE = 'secrets.key';

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new RangeError('the secrets key must be 32 bytes');
  }

  seal(plain: string): string {
    if (plain.startsWith(PREFIX)) return plain;
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return `${PREFIX}${iv.toString('base64url')}.${c.getAuthTag().toString('base64url')}.${ct.toString('base64url')}`;
  }

  /** The plain value; a value without the prefix is returned unchanged (stored before sealing). */
  open(value: string): string {
    if (!value.startsWith(PREFIX)) return value;
    const [iv, tag, ct] = value.slice(PREFIX.length).split('.');
    const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv ?? '', 'base64url'));
    d.setAuthTag(Buffer.from(tag ?? '', 'base64url'));
    return Buffer.concat([d.update(Buffer.from(ct ?? '', 'base64url')), d.final()]).toString('utf8');
  }

  /** A subkey for another purpose (HKDF-SHA256), so one configured key serves several. */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), `tapline:${purpose}`, 32));
  }
}

export const isSealed = (v: unknown): boolean => typeof v === 'string' && v.startsWith(PREFIX);

function parseKey(v: string): Buffer {
  return /^[0-9A-Fa-f]{64}$/.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64');
}

/**
 * SECRETS_KEY when set (every process of a deployment must share it); otherwise a key generated
 * on first start and kept in DATA_DIR/secrets.key (mode 0600), which serves the embedded start
 * where one process, or several on one machine, share that folder.
 */
export function secretsKey(cfg: Pick<Config, 'secrets' | 'dataDir'>): Buffer {
  if (cfg.secrets.key) return parseKey(cfg.secrets.key);
  const file = path.join(cfg.dataDir, KEY_FILE);
  try {
    return parseKey(fs.readFileSync(file, 'utf8').trim());
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(cfg.dataDir, { recursive: true });
  try {
    // `wx`: of two processes starting at once, one writes and the other reads its key.
    fs.writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    // The path only, never the key.
    logger('secrets').info(
      { file },
      'SECRETS_KEY is not set: generated a key for the secrets stored in Postgres and kept it in this file (back it up with the data; set SECRETS_KEY where processes do not share DATA_DIR)',
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return parseKey(fs.readFileSync(file, 'utf8').trim());
}

let cached: { cfg: object; box: SecretBox } | undefined;
/** The process's SecretBox for `cfg` (the key file is read once). */
export function secretBox(cfg: Pick<Config, 'secrets' | 'dataDir'>): SecretBox {
  if (cached?.cfg !== cfg) cached = { cfg, box: new SecretBox(secretsKey(cfg)) };
  return cached.box;
}

/** The chat widget's user hash: HMAC-SHA256 of the user sid with CHAT_HASH_KEY, or a derived key. */
export function chatUserHash(cfg: Pick<Config, 'secrets' | 'dataDir'>, userSid: string): string {
  const key = cfg.secrets.chatHashKey ?? secretBox(cfg).derive('chat-user-hash');
  return createHmac('sha256', key).update(userSid).digest('hex');
}
