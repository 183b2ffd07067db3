import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { fieldErrors } from '../../api/client';
import { apiTokens, type ApiToken, type ApiTokenCreate } from '../../api/settings';
import { Field, FormError } from '../../components/form';
import { ScopePicker, grantableScopes } from './scope-picker';
import { useAccountSid, useSession } from '../../lib/session';
import { endOfDay } from './token-parts';

/** The API token form's values; Replace starts one from an existing token's name and scopes. */
export interface Draft {
  name: string;
  description: string;
  scopes: string[];
  expiry: 'never' | 'date';
  expiresOn: string;
  environment: 'live' | 'test';
  environmentSid: string;
}

export const EMPTY_DRAFT: Draft = {
  name: '',
  description: '',
  scopes: [],
  expiry: 'never',
  expiresOn: '',
  environment: 'live',
  environmentSid: '',
};

/** The API token form: name, scopes (grid and presets), expiry and environment. */
export function CreateApiToken({
  initial,
  onCancel,
  onCreated,
}: {
  initial: Draft;
  onCancel: () => void;
  onCreated: (t: ApiToken) => Promise<void>;
}) {
  const accountSid = useAccountSid();
  const { session } = useSession();
  const available = grantableScopes(session.scopes);
  const [d, setD] = useState<Draft>(initial);
  const set = (patch: Partial<Draft>) => setD((x) => ({ ...x, ...patch }));
  const create = useMutation({
    mutationFn: () => {
      const body: ApiTokenCreate = {
        name: d.name,
        description: d.description,
        scopes: d.scopes,
        expiresAt: d.expiry === 'date' && d.expiresOn ? endOfDay(d.expiresOn) : null,
        environment: d.environment,
        environmentSid: d.environmentSid || null,
      };
      return apiTokens.create(accountSid, body);
    },
    onSuccess: onCreated,
  });
  const errs = fieldErrors(create.error);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const today = new Date().toISOString().slice(0, 10);
  return (
    <section className="panel" aria-labelledby="new-token-title">
      <h2 id="new-token-title">New API token</h2>
      {initial.name ? (
        <p className="hint">
          A replacement with the same scopes: pick a new expiry if you like, then delete the old token once
          every client uses the new one.
        </p>
      ) : null}
      <form className="stack" onSubmit={submit} noValidate>
        <div className="grid-2">
          <Field
            id="token-name"
            label="Name"
            required
            maxLength={200}
            placeholder="e.g. checkout-service production"
            value={d.name}
            error={errs.name}
            onChange={(e) => set({ name: e.target.value })}
          />
          <div className="field">
            <label htmlFor="token-environment">Environment</label>
            <select
              id="token-environment"
              value={d.environment}
              onChange={(e) => set({ environment: e.target.value as Draft['environment'] })}
            >
              <option value="live">live (at_live_…)</option>
              <option value="test">test (at_test_…)</option>
            </select>
            <div className="hint">
              Only the value's prefix differs, so test tokens are easy to tell apart.
            </div>
          </div>
        </div>
        <div className="field">
          <label htmlFor="token-description">Description (optional)</label>
          <textarea
            id="token-description"
            rows={2}
            maxLength={2000}
            value={d.description}
            aria-invalid={errs.description ? true : undefined}
            aria-describedby={errs.description ? 'token-description-error' : undefined}
            onChange={(e) => set({ description: e.target.value })}
          />
          {errs.description ? (
            <div id="token-description-error" className="field-error" role="alert">
              {errs.description}
            </div>
          ) : null}
        </div>
        <ScopePicker
          value={d.scopes}
          onChange={(scopes) => set({ scopes })}
          available={available}
          error={errs.scopes}
        />
        <div className="grid-2">
          <fieldset className="field expiry">
            <legend>Expires</legend>
            <label className="check">
              <input
                type="radio"
                name="token-expiry"
                checked={d.expiry === 'never'}
                onChange={() => set({ expiry: 'never' })}
              />
              Never
            </label>
            <label className="check">
              <input
                type="radio"
                name="token-expiry"
                checked={d.expiry === 'date'}
                onChange={() => set({ expiry: 'date', expiresOn: d.expiresOn || today })}
              />
              At the end of
              <input
                type="date"
                aria-label="Expiry date"
                min={today}
                value={d.expiresOn}
                disabled={d.expiry !== 'date'}
                aria-invalid={errs.expiresAt ? true : undefined}
                onChange={(e) => set({ expiresOn: e.target.value })}
              />
            </label>
            {errs.expiresAt ? (
              <div className="field-error" role="alert">
                {errs.expiresAt}
              </div>
            ) : (
              <div className="hint">Cannot be changed later.</div>
            )}
          </fieldset>
          <Field
            id="token-environment-sid"
            label="Environment sid label (optional)"
            maxLength={6}
            placeholder="e.g. prod01"
            hint="6 lowercase letters or digits, shown on the token; it does not restrict it."
            value={d.environmentSid}
            error={errs.environmentSid}
            onChange={(e) => set({ environmentSid: e.target.value.trim() })}
          />
        </div>
        <FormError
          error={create.error}
          shownAt={['name', 'description', 'scopes', 'expiresAt', 'environmentSid']}
        />
        <div className="actions">
          <button type="button" className="btn" onClick={onCancel}>
            Cancel
          </button>
          <button
            type="submit"
            className="btn btn-primary"
            disabled={create.isPending || !d.name.trim() || d.scopes.length === 0}
          >
            {create.isPending ? 'Creating…' : 'Create token'}
          </button>
        </div>
      </form>
    </section>
  );
}
