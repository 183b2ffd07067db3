/** Sign-in, session and member shapes of the authentication endpoints (docs/auth.md). */
export interface SessionUser {
  sid: string;
  email: string;
  firstName: string;
  lastName: string;
}

export interface SignInResult {
  sessionToken: string;
  csrfToken: string;
  expiresAt: string | null;
  accountSid: string;
  role: string;
  user: SessionUser;
}

export interface Session {
  kind: 'session' | 'apiToken';
  accountSid: string;
  role: string;
  scopes: string[];
  expiresAt: string | null;
  user: SessionUser | null;
}

export interface Member {
  sid: string;
  email: string;
  firstName: string;
  lastName: string;
  role: string;
  status: 'active' | 'invited';
  createdAt: string;
  lastSignInAt: string | null;
}

export interface InviteResult {
  user: Member;
  inviteUrl: string;
  inviteToken: string;
  expiresAt: string;
}

export interface InviteInfo {
  email: string;
  accountName: string;
  role: string;
  expiresAt: string;
}
