import { createContext, useContext } from 'react';
import type { Session } from '../api/auth-types';
import { auth } from '../api/resources';

export interface SessionContextValue {
  session: Session;
  accounts: { sid: string; name: string; role: string }[];
  /** the scope check the API does, mirrored to hide what a role cannot do */
  can: (scope: string) => boolean;
  refresh: () => Promise<void>;
}

export const SessionContext = createContext<SessionContextValue | null>(null);

/**
 * Ends the session once the calls on their way have finished, then opens the sign-in page. Given
 * by the signed-in shell, also around the frame shown while the session cannot be read.
 */
export const SignOutContext = createContext<() => Promise<void>>(async () => {
  await auth.signOut().catch(() => undefined);
  window.location.assign('/signin');
});

export function useSession(): SessionContextValue {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}

/** The signed-in account's sid: every /v1/accounts/{a} call uses it. */
export function useAccountSid(): string {
  return useSession().session.accountSid;
}
