import { useMutation } from '@tanstack/react-query';
import { useEffect, useRef, type ReactNode } from 'react';

/**
 * A modal dialog: an open <dialog> over a backdrop, focus moved into it, Escape and the backdrop
 * close it. (Rendered open rather than through showModal(), whose close-on-unmount raced React's
 * state in tests.)
 */
export function Dialog({
  title,
  onClose,
  children,
}: {
  title: string;
  onClose: () => void;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const first = ref.current?.querySelector<HTMLElement>(
      'input, select, textarea, button:not(.dialog-close)',
    );
    first?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') close.current();
    };
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      before?.focus?.();
    };
  }, []);
  return (
    <div className="dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <dialog ref={ref} open className="dialog" aria-modal="true" aria-labelledby="dialog-title">
        <div className="dialog-head">
          <h2 id="dialog-title">{title}</h2>
          <button type="button" className="btn btn-ghost dialog-close" aria-label="Close" onClick={onClose}>
            ✕
          </button>
        </div>
        {children}
      </dialog>
    </div>
  );
}

/** Asks once before a destructive action and says what it will do. */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  onConfirm,
  onClose,
  busy,
  error,
}: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onClose: () => void;
  busy?: boolean;
  error?: unknown;
}) {
  return (
    <Dialog title={title} onClose={onClose}>
      <div className="stack">
        {children}
        {error ? (
          <div className="form-error" role="alert">
            {error instanceof Error ? error.message : 'Something went wrong'}
          </div>
        ) : null}
        <div className="actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="btn btn-danger" onClick={onConfirm} disabled={busy}>
            {confirmLabel}
          </button>
        </div>
      </div>
    </Dialog>
  );
}

/**
 * A ConfirmDialog whose confirm runs `remove`; once it succeeds, `onDone` (a list's refetch, a
 * change of page) is awaited and the dialog closes. A refusal stays in the dialog as its error.
 * `blocked` keeps the confirm button disabled (e.g. until the person types the name).
 */
export function RemoveDialog({
  title,
  confirmLabel,
  remove,
  onDone,
  onClose,
  blocked = false,
  children,
}: {
  title: string;
  confirmLabel: string;
  remove: () => Promise<unknown>;
  onDone: () => unknown;
  onClose: () => void;
  blocked?: boolean;
  children: ReactNode;
}) {
  const removal = useMutation({
    mutationFn: remove,
    onSuccess: async () => {
      await onDone();
      onClose();
    },
  });
  return (
    <ConfirmDialog
      title={title}
      confirmLabel={confirmLabel}
      busy={removal.isPending || blocked}
      error={removal.error}
      onConfirm={() => removal.mutate()}
      onClose={onClose}
    >
      {children}
    </ConfirmDialog>
  );
}
