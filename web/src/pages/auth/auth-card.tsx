import type { ReactNode } from 'react';

/** The centred card of the pages shown before sign-in. */
export function AuthCard({
  title,
  intro,
  children,
}: {
  title: string;
  intro?: ReactNode;
  children: ReactNode;
}) {
  return (
    <div className="auth-screen">
      <main className="auth-card">
        <div className="brand brand-large">
          <img src="/favicon.svg" alt="" width={28} height={28} />
          <span>Tapline</span>
        </div>
        <h1>{title}</h1>
        {intro ? <p className="muted">{intro}</p> : null}
        {children}
      </main>
    </div>
  );
}
