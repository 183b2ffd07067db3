import type { InputHTMLAttributes, ReactNode } from 'react';
import { fieldErrors } from '../api/client';

/** A labelled input with the API's field error under it (aria-describedby ties them together). */
export function Field({
  label,
  error,
  hint,
  id,
  ...input
}: { label: string; error?: string; hint?: ReactNode; id: string } & InputHTMLAttributes<HTMLInputElement>) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : hint ? `${id}-hint` : undefined}
        {...input}
      />
      {hint && !error ? (
        <div id={`${id}-hint`} className="hint">
          {hint}
        </div>
      ) : null}
      {error ? (
        <div id={`${id}-error`} className="field-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}

/**
 * The envelope's message of a failed submit, shown inline above the buttons. `shownAt` names the
 * fields the form shows API errors at (`bucketSids.*` also covers `bucketSids.0`): a validation
 * error about those fields only is already told next to each field, so it is not repeated here
 * with the API's field names.
 */
export function FormError({ error, shownAt }: { error: unknown; shownAt?: readonly string[] }) {
  if (!error) return null;
  if (shownAt) {
    const fields = Object.keys(fieldErrors(error));
    const atField = (f: string) =>
      shownAt.some(
        (s) => f === s || (s.endsWith('.*') && (f === s.slice(0, -2) || f.startsWith(s.slice(0, -1)))),
      );
    if (fields.length > 0 && fields.every(atField)) return null;
  }
  return (
    <div className="form-error" role="alert">
      {error instanceof Error ? error.message : 'Something went wrong'}
    </div>
  );
}
