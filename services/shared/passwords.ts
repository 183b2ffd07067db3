import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords are hashed with scrypt (memory-hard: N=2^15, r=8 takes 32 MiB and ~50-100 ms per
 * hash on this machine's cores), stored self-describing as `scrypt$N$r$p$<salt>$<hash>` so the
 * cost can be raised later without breaking stored hashes.
 */
const N = 2 ** 15;
const R = 8;
const P = 1;
const KEY_LEN = 32;
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;

function scrypt(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  const opts: ScryptOptions = { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scryptCb(password.normalize('NFKC'), salt, KEY_LEN, opts, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** A stored hash of a password no one knows: unknown emails are checked against it, same cost. */
const DUMMY = hashPassword(randomBytes(24).toString('base64'));

/**
 * True when `password` matches `stored`. With no stored hash (unknown email, user without a
 * password) it still runs one scrypt, so the answer takes the same time either way.
 */
export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const parts = (stored ?? (await DUMMY)).split('$');
  const [kind, n, r, p, salt, hash] = parts;
  if (parts.length !== 6 || kind !== 'scrypt') {
    await scrypt(password, Buffer.alloc(16), N, R, P);
    return false;
  }
  const expected = Buffer.from(hash!, 'base64');
  const key = await scrypt(password, Buffer.from(salt!, 'base64'), Number(n), Number(r), Number(p));
  return (
    stored !== null &&
    stored !== undefined &&
    key.length === expected.length &&
    timingSafeEqual(key, expected)
  );
}

/** The reason a new password is refused, or null. */
export function passwordProblem(password: unknown): string | null {
  if (typeof password !== 'string') return 'must be a string';
  if (password.length < PASSWORD_MIN) return `must be at least ${PASSWORD_MIN} characters`;
  if (password.length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters`;
  return null;
}
