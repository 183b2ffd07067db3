import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Redirect, useLocation } from 'wouter';
import { auth } from '../../api/resources';
import { fieldErrors } from '../../api/client';
import { Field, FormError } from '../../components/form';
import { Loading } from '../../components/state';
import { AuthCard } from './auth-card';
import { setupStatusQuery } from '../../api/queries';

/** First run: no account exists yet, so the first person creates one (and its administrator). */
export function SetupPage() {
  const qc = useQueryClient();
  const [, navigate] = useLocation();
  const status = useQuery(setupStatusQuery);
  const [form, setForm] = useState({ name: '', email: '', password: '', accountName: '' });
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  if (status.isPending) return <Loading />;
  if (status.data && !status.data.needsSetup) return <Redirect to="/signin" replace />;
  const errs = fieldErrors(error);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await auth.setup({ ...form, accountName: form.accountName || undefined });
      qc.clear();
      navigate('/overview', { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const bind = (k: keyof typeof form) => ({
    value: form[k],
    onChange: (e: { target: { value: string } }) => setForm((f) => ({ ...f, [k]: e.target.value })),
  });
  return (
    <AuthCard
      title="Create the first account"
      intro="Tapline has no account yet. You become its administrator; you can invite your team afterwards."
    >
      <form onSubmit={submit} className="stack">
        <Field id="name" label="Your name" required autoComplete="name" error={errs.name} {...bind('name')} />
        <Field
          id="email"
          label="Email"
          type="email"
          required
          autoComplete="username"
          error={errs.email}
          {...bind('email')}
        />
        <Field
          id="password"
          label="Password"
          type="password"
          required
          minLength={8}
          autoComplete="new-password"
          hint="At least 8 characters."
          error={errs.password}
          {...bind('password')}
        />
        <Field
          id="accountName"
          label="Account name (optional)"
          placeholder="e.g. Acme platform team"
          error={errs.accountName}
          {...bind('accountName')}
        />
        <FormError error={error} shownAt={['name', 'email', 'password', 'accountName']} />
        <button type="submit" className="btn btn-primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create account'}
        </button>
      </form>
    </AuthCard>
  );
}
