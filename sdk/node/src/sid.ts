import { randomBytes } from 'node:crypto';

const ALPHABET = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 'latin1');
let pool = Buffer.alloc(0);
let at = 0;
/** The sid's characters are written here and read out as one string (no per-character strings). */
const out = Buffer.from('req_' + ' '.repeat(27), 'latin1');

/**
 * A record sid made in the client (`req_` + 27 base62 characters, the server's format), so a
 * batch sent twice carries the same sids and the processor stores each record once. Bytes come
 * from a pooled crypto buffer; values >= 248 are skipped so each character is uniform.
 */
export function newRecordSid(): string {
  let i = 4;
  while (i < 31) {
    if (at >= pool.length) {
      pool = randomBytes(4096);
      at = 0;
    }
    const b = pool[at++]!;
    if (b < 248) out[i++] = ALPHABET[b % 62]!;
  }
  return out.toString('latin1', 0, 31);
}
