import type { InputHTMLAttributes, ReactNode } from 'react';

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

/** The envelope's message of a failed submit, shown inline above the buttons. */
export function FormError({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <div className="form-error" role="alert">
      {error instanceof Error ? error.message : 'Something went wrong'}
    </div>
  );
}
