import type { ReactNode } from 'react';
import { CopyButton } from '../../components/copy-button';
import { formatDateTime, relative } from '../../lib/time';

/** `<input type="date">` value → the end of that day in the browser's zone, as ISO 8601. */
export function endOfDay(date: string): string {
  return new Date(`${date}T23:59:59`).toISOString();
}

/** When a token was last used, relative with the exact time on hover, or “never”. */
export function lastUsed(iso: string | null | undefined) {
  return iso ? (
    <span title={formatDateTime(iso)}>{relative(iso)}</span>
  ) : (
    <span className="muted">never</span>
  );
}

/** The value shown once after a create, with the one warning that matters. */
export function NewSecret({
  value,
  onDone,
  children,
}: {
  value: string;
  onDone: () => void;
  children?: ReactNode;
}) {
  return (
    <div className="secret-box secret-new" role="status">
      <strong>Copy this token now: you will not see it again.</strong>
      <div className="secret-value">
        <code data-testid="new-token-value" className="break">
          {value}
        </code>
        <CopyButton text={value} label="Copy token" />
      </div>
      {children}
      <div>
        <button type="button" className="btn btn-small" onClick={onDone}>
          I have copied it
        </button>
      </div>
    </div>
  );
}
