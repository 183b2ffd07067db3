-- Up Migration
-- Sign-in for the dashboard: password hashes (scrypt), sliding session expiry with a CSRF token
-- per session, and one-time invitations to an account.

ALTER TABLE users ADD COLUMN IF NOT EXISTS password_hash text;
ALTER TABLE users ADD COLUMN IF NOT EXISTS last_sign_in_at timestamptz;
CREATE INDEX IF NOT EXISTS users_email_lower ON users (lower(email));

-- Only the SHA-256 of a session's CSRF token is kept, as for every credential.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS csrf_hash bytea;

CREATE TABLE IF NOT EXISTS invites (
  sid          text PRIMARY KEY,
  account_sid  text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  email        text NOT NULL,
  first_name   text NOT NULL DEFAULT '',
  last_name    text NOT NULL DEFAULT '',
  role         text NOT NULL CHECK (role IN ('administrator', 'user')),
  token_hash   bytea NOT NULL UNIQUE,
  created_by   text REFERENCES users (sid) ON DELETE SET NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  accepted_at  timestamptz
);
CREATE INDEX IF NOT EXISTS invites_account ON invites (account_sid, created_at);

-- A membership's role change or removal must end what its sessions may do at once.
CREATE TRIGGER memberships_notify AFTER UPDATE OR DELETE ON memberships
  FOR EACH STATEMENT EXECUTE FUNCTION tapline_notify_auth();

-- A session switched to another account must lose the old account's access in every process.
DROP TRIGGER IF EXISTS sessions_notify ON sessions;
CREATE TRIGGER sessions_notify AFTER UPDATE OF ended_at, expires_at, account_sid OR DELETE ON sessions
  FOR EACH STATEMENT EXECUTE FUNCTION tapline_notify_auth();
