import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { TOKEN_PREFIX, hashToken, newTokenValue } from '../../shared/credentials.js';
import { cameOverHttps } from '../../shared/http-server.js';
import { newSid, randomAlnum } from '../../shared/ids.js';

export const SESSION_COOKIE = 'tapline_session';
export const CSRF_COOKIE = 'tapline_csrf';

export interface StartedSession {
  sid: string;
  sessionToken: string;
  csrfToken: string;
  expiresAt: Date;
}

/**
 * A new dashboard session for a member of an account: a session token (cookie) and a CSRF token
 * (readable cookie, sent back in X-CSRF-Token on writes). Only their SHA-256 hashes are stored.
 */
export async function startSession(
  db: pg.Pool | pg.PoolClient,
  userSid: string,
  accountSid: string,
  ttlDays: number,
): Promise<StartedSession> {
  const sessionToken = newTokenValue(TOKEN_PREFIX.session);
  const csrfToken = randomAlnum(40);
  const expiresAt = new Date(Date.now() + ttlDays * 86_400_000);
  const sid = newSid('session');
  await db.query(
    `INSERT INTO sessions (sid, user_sid, account_sid, token_hash, csrf_hash, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [sid, userSid, accountSid, hashToken(sessionToken), hashToken(csrfToken), expiresAt],
  );
  await db.query('UPDATE users SET last_sign_in_at = now() WHERE sid = $1', [userSid]);
  return { sid, sessionToken, csrfToken, expiresAt };
}

const secure = cameOverHttps;

/** Sets the session cookie (HttpOnly) and the CSRF cookie (readable by the dashboard's script). */
export function setSessionCookies(req: FastifyRequest, reply: FastifyReply, s: StartedSession): void {
  const maxAge = Math.max(1, Math.floor((s.expiresAt.getTime() - Date.now()) / 1000));
  const base = { path: '/', sameSite: 'strict' as const, secure: secure(req), maxAge };
  void reply.setCookie(SESSION_COOKIE, s.sessionToken, { ...base, httpOnly: true });
  void reply.setCookie(CSRF_COOKIE, s.csrfToken, { ...base, httpOnly: false });
}

export function clearSessionCookies(req: FastifyRequest, reply: FastifyReply): void {
  const base = { path: '/', sameSite: 'strict' as const, secure: secure(req), maxAge: 0 };
  void reply.setCookie(SESSION_COOKIE, '', { ...base, httpOnly: true });
  void reply.setCookie(CSRF_COOKIE, '', { ...base, httpOnly: false });
}
