import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useLocation } from 'wouter';
import { auth } from '../../api/resources';
import { fieldErrors } from '../../api/client';
import { Field, FormError } from '../../components/form';
import { ErrorBox, Loading } from '../../components/state';
import { AuthCard } from './auth-card';

/**
 * The one-time link of an invitation: a new person chooses a password; a person who already has a
 * Tapline user enters their own password (the server never changes it). Either way they are signed in.
 * The page does not know which: the API does not say whether the email has a user before the
 * person proves who they are, so one form serves both.
 */
export function InvitePage({ params }: { params: { token: string } }) {
  const qc = useQueryClient();
  const [, navigate] = useLocation();
  const info = useQuery({
    queryKey: ['invite', params.token],
    queryFn: () => auth.invite(params.token),
    retry: false,
  });
  const [form, setForm] = useState({ firstName: '', lastName: '', password: '' });
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  if (info.isPending) return <Loading />;
  if (info.error)
    return (
      <AuthCard title="Invitation">
        <ErrorBox error={info.error} />
        <p className="hint">Ask an administrator of the account for a new invitation.</p>
      </AuthCard>
    );
  const errs = fieldErrors(error);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await auth.acceptInvite(params.token, form);
      qc.clear();
      navigate('/overview', { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <AuthCard
      title={`Join ${info.data.accountName}`}
      intro={`You were invited as ${info.data.email} with the role ${info.data.role}. If ${info.data.email} already has a Tapline password, enter it to join (your name stays as it is); otherwise choose a password to finish.`}
    >
      <form onSubmit={submit} className="stack">
        <Field
          id="firstName"
          label="First name (new to Tapline)"
          autoComplete="given-name"
          value={form.firstName}
          onChange={(e) => setForm((f) => ({ ...f, firstName: e.target.value }))}
        />
        <Field
          id="lastName"
          label="Last name (new to Tapline)"
          autoComplete="family-name"
          value={form.lastName}
          onChange={(e) => setForm((f) => ({ ...f, lastName: e.target.value }))}
        />
        <Field
          id="password"
          label="Password"
          type="password"
          required
          minLength={8}
          autoComplete="current-password"
          error={errs.password}
          value={form.password}
          onChange={(e) => setForm((f) => ({ ...f, password: e.target.value }))}
        />
        <FormError error={error} />
        <button type="submit" className="btn btn-primary" disabled={busy}>
          {busy ? 'Joining…' : 'Join and sign in'}
        </button>
      </form>
    </AuthCard>
  );
}
