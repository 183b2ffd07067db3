import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useLocation, useSearch } from 'wouter';
import { auth } from '../../api/resources';
import { Field, FormError } from '../../components/form';
import { AuthCard } from './auth-card';

/** Only same-site paths are followed after sign-in (no open redirect). */
export function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/overview';
}

/**
 * The sign-in page: the single sign-on button when the API has OpenID Connect configured, the
 * password form unless it is turned off (OIDC_ONLY), and the reason of a refused single sign-on
 * (`?sso_error=<reason>`, its message from the API).
 */
export function SignInPage() {
  const search = useSearch();
  const params = new URLSearchParams(search);
  const methods = useQuery({ queryKey: ['signin-methods'], queryFn: auth.methods, staleTime: Infinity });
  const oidc = methods.data?.oidc ?? null;
  // Without an answer (an API that cannot be reached), the password form is offered.
  const password = methods.data ? methods.data.password : !methods.isPending;
  const ssoError = params.get('sso_error');
  const next = params.get('next');

  return (
    <AuthCard title="Sign in">
      <div className="stack">
        {ssoError ? (
          <div className="form-error" role="alert">
            {oidc?.refusals[ssoError] ?? 'Single sign-on failed. Start again.'}
          </div>
        ) : null}
        {oidc ? (
          <a
            className="btn btn-primary btn-sso"
            href={next ? `${oidc.startUrl}?next=${encodeURIComponent(safeNext(next))}` : oidc.startUrl}
          >
            Sign in with {oidc.name}
          </a>
        ) : null}
        {oidc && password ? <div className="auth-divider">or with your Tapline password</div> : null}
        {password ? <PasswordForm primary={!oidc} /> : null}
      </div>
    </AuthCard>
  );
}

function PasswordForm({ primary }: { primary: boolean }) {
  const search = useSearch();
  const [, navigate] = useLocation();
  const qc = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await auth.signIn({ email, password });
      qc.clear();
      navigate(safeNext(new URLSearchParams(search).get('next')), { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} className="stack">
      <Field
        id="email"
        label="Email"
        type="email"
        autoComplete="username"
        required
        value={email}
        onChange={(e) => setEmail(e.target.value)}
      />
      <Field
        id="password"
        label="Password"
        type="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={(e) => setPassword(e.target.value)}
      />
      <FormError error={error} />
      <button type="submit" className={primary ? 'btn btn-primary' : 'btn'} disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
      <p className="hint">
        Forgot your password? An operator can set a new one with{' '}
        <code>npm run admin -- set-password --email you@example.com</code>.
      </p>
    </form>
  );
}
