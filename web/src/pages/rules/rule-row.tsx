import { FormError } from '../../components/form';

/**
 * The cells every rule list row ends with (exclusions and redactions, either shape): where the
 * rule applies, its on/off switch and its actions.
 */
export function RuleRowEnd({
  label,
  buckets,
  environments,
  active,
  canWrite,
  canDelete,
  toggling,
  onToggle,
  onOpen,
  onDelete,
}: {
  /** the rule's name in the list, for the controls' accessible names */
  label: string;
  buckets: readonly string[] | null;
  environments: readonly string[] | null;
  active: boolean;
  canWrite: boolean;
  canDelete: boolean;
  toggling: boolean;
  onToggle: () => void;
  onOpen: () => void;
  onDelete: () => void;
}) {
  return (
    <>
      <td className="small">
        {buckets ? `${buckets.length} bucket${buckets.length === 1 ? '' : 's'}` : 'every bucket'}
        {' · '}
        {environments ? environments.join(', ') : 'every environment'}
      </td>
      <td>
        <label className="check">
          <input
            type="checkbox"
            checked={active}
            disabled={!canWrite || toggling}
            aria-label={`Active: ${label}`}
            onChange={onToggle}
          />
          <span aria-hidden="true">{active ? 'on' : 'off'}</span>
        </label>
      </td>
      <td>
        <div className="row-actions">
          <button
            type="button"
            className="btn btn-small"
            aria-label={`${canWrite ? 'Edit' : 'Open'} ${label}`}
            onClick={onOpen}
          >
            {canWrite ? 'Edit' : 'Open'}
          </button>
          {canDelete ? (
            <button
              type="button"
              className="btn btn-small btn-danger-ghost"
              aria-label={`Delete ${label}`}
              onClick={onDelete}
            >
              Delete
            </button>
          ) : null}
        </div>
      </td>
    </>
  );
}

/** The end of a rule form: the API's error, then Cancel (Close when read-only) and Save/Create. */
export function RuleFormEnd({
  error,
  editable,
  pending,
  noun,
  isNew,
  onClose,
}: {
  error: unknown;
  editable: boolean;
  pending: boolean;
  /** `exclusion` or `redaction`, for the submit button's label */
  noun: string;
  isNew: boolean;
  onClose: () => void;
}) {
  return (
    <>
      <FormError error={error} />
      <div className="actions">
        <button type="button" className="btn" onClick={onClose}>
          {editable ? 'Cancel' : 'Close'}
        </button>
        {editable ? (
          <button type="submit" className="btn btn-primary" disabled={pending}>
            {pending ? 'Saving…' : `${isNew ? 'Create' : 'Save'} ${noun}`}
          </button>
        ) : null}
      </div>
    </>
  );
}
