import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { fieldErrors } from '../../api/client';
import { members } from '../../api/resources';
import type { InviteResult, Member } from '../../api/auth-types';
import { CopyButton } from '../../components/copy-button';
import { ConfirmDialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import { Empty, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { DataTable } from '../../components/data-table';

const ROLES = [
  { id: 'administrator', label: 'Administrator', hint: 'every setting, tokens and members' },
  { id: 'user', label: 'User', hint: 'reads everything, sends traffic, manages event markers' },
];

/** The account's members: invite with a role, change role, remove. */
export function MembersPage() {
  const accountSid = useAccountSid();
  const { can, session } = useSession();
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: ['members', accountSid],
    queryFn: () => members.list(accountSid),
    enabled: can('users:read'),
  });
  const [removing, setRemoving] = useState<Member | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: ['members', accountSid] });
  const setRole = useMutation({
    mutationFn: ({ sid, role }: { sid: string; role: string }) => members.setRole(accountSid, sid, role),
    onSettled: refresh,
  });
  const remove = useMutation({
    mutationFn: (sid: string) => members.remove(accountSid, sid),
    onSuccess: async () => {
      setRemoving(null);
      await refresh();
    },
  });
  if (!can('users:read'))
    return (
      <div className="page">
        <h1>Members</h1>
        <Empty title="Only administrators manage members">
          Ask an administrator of the account to invite people or change roles.
        </Empty>
      </div>
    );
  return (
    <div className="page">
      <div className="page-head">
        <h1>Members</h1>
      </div>
      {can('users:write') ? <InviteForm onInvited={refresh} /> : null}
      <section className="panel">
        <h2>People in this account</h2>
        {setRole.error ? (
          <div className="form-error" role="alert">
            {setRole.error.message}
          </div>
        ) : null}
        <QueryView
          query={list}
          isEmpty={(d) => d.users.length === 0}
          empty={<Empty title="No members yet" />}
        >
          {(d) => (
            <DataTable columns={['Email', 'Name', 'Role', 'Status', 'Last sign-in', '']}>
              {d.users.map((u) => (
                <tr key={u.sid}>
                  <td>{u.email}</td>
                  <td>{[u.firstName, u.lastName].filter(Boolean).join(' ') || '–'}</td>
                  <td>
                    {can('users:write') && u.sid !== session.user?.sid && u.status === 'active' ? (
                      <select
                        aria-label={`Role of ${u.email}`}
                        value={u.role}
                        onChange={(e) => setRole.mutate({ sid: u.sid, role: e.target.value })}
                      >
                        {ROLES.map((r) => (
                          <option key={r.id} value={r.id}>
                            {r.label}
                          </option>
                        ))}
                      </select>
                    ) : (
                      u.role
                    )}
                  </td>
                  <td>
                    <span className={`badge ${u.status === 'invited' ? 'badge-pending' : 'badge-ok'}`}>
                      {u.status}
                    </span>
                  </td>
                  <td className="small">{u.lastSignInAt ? formatDateTime(u.lastSignInAt) : '–'}</td>
                  {/* The flex box sits inside the cell: a flex <td> loses its table borders. */}
                  <td>
                    <div className="row-actions">
                      {can('users:delete') && u.sid !== session.user?.sid ? (
                        <button
                          type="button"
                          className="btn btn-small btn-danger-ghost"
                          onClick={() => setRemoving(u)}
                        >
                          Remove
                        </button>
                      ) : null}
                    </div>
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </QueryView>
      </section>
      {removing ? (
        <ConfirmDialog
          title={`Remove ${removing.email}?`}
          confirmLabel="Remove member"
          busy={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(removing.sid)}
          onClose={() => setRemoving(null)}
        >
          <p>
            They lose access to this account at once (their sessions for it end). Their past notes and events
            stay.
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

function InviteForm({ onInvited }: { onInvited: () => void }) {
  const accountSid = useAccountSid();
  const [form, setForm] = useState({ email: '', role: 'user' });
  const [result, setResult] = useState<InviteResult | null>(null);
  const invite = useMutation({
    mutationFn: () => members.invite(accountSid, form),
    onSuccess: (r) => {
      setResult(r);
      setForm({ email: '', role: 'user' });
      onInvited();
    },
  });
  const errs = fieldErrors(invite.error);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setResult(null);
    invite.mutate();
  };
  return (
    <section className="panel">
      <h2>Invite someone</h2>
      <form className="invite-form" onSubmit={submit}>
        <Field
          id="invite-email"
          label="Email"
          type="email"
          required
          value={form.email}
          error={errs.email}
          onChange={(e) => setForm((f) => ({ ...f, email: e.target.value }))}
        />
        <div className="field">
          <label htmlFor="invite-role">Role</label>
          <select
            id="invite-role"
            value={form.role}
            onChange={(e) => setForm((f) => ({ ...f, role: e.target.value }))}
          >
            {ROLES.map((r) => (
              <option key={r.id} value={r.id}>
                {r.label}: {r.hint}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" className="btn btn-primary" disabled={invite.isPending}>
          Invite
        </button>
      </form>
      <FormError error={invite.error} shownAt={['email']} />
      {result ? (
        <div className="secret-box" role="status">
          <p>
            <strong>Invitation for {result.user.email} created.</strong> Send this link to the person: it
            works once, until {formatDateTime(result.expiresAt)}. No email is sent by Tapline.
          </p>
          <code data-testid="invite-url" className="break">
            {result.inviteUrl}
          </code>
          <CopyButton text={result.inviteUrl} label="Copy link" />
        </div>
      ) : null}
    </section>
  );
}
