import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { List } from '../../api/types';
import { useAccountSid } from '../../lib/session';
import { useQueryState } from '../../lib/url-state';

/**
 * The state of a rule list page (exclusions, redactions): the list, the rule open in the editor
 * (`?rule=` in the URL), the notice above the list, the on/off switch and deletion.
 */
export function useRuleList<T extends { sid: string }>(opts: {
  /** the list's query key and the resource the API names it by */
  key: 'exclusions' | 'redactions';
  list: (accountSid: string) => Promise<List<T>>;
  remove: (accountSid: string, sid: string) => Promise<unknown>;
  /** the same rule with its active flag flipped, in its own shape */
  toggled: (accountSid: string, x: T) => Promise<T>;
  labelOf: (x: T) => string;
  activeOf: (x: T) => boolean;
}) {
  const { key, labelOf, activeOf } = opts;
  const accountSid = useAccountSid();
  const qc = useQueryClient();
  const { get, set } = useQueryState();
  const [notice, setNotice] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<T | null>(null);
  const list = useQuery({ queryKey: [key, accountSid], queryFn: () => opts.list(accountSid) });
  const toggle = useMutation({
    mutationFn: (x: T) => opts.toggled(accountSid, x),
    onSuccess: async (x) => {
      // The row shows the stored state at once, before the list is read again.
      qc.setQueryData<List<T>>([key, accountSid], (old) =>
        old ? { ...old, records: old.records.map((r) => (r.sid === x.sid ? x : r)) } : old,
      );
      setNotice(`“${labelOf(x)}” is ${activeOf(x) ? 'active' : 'inactive'}.`);
      await qc.invalidateQueries({ queryKey: [key, accountSid] });
    },
  });
  const remove = useMutation({
    mutationFn: (sid: string) => opts.remove(accountSid, sid),
    onSuccess: async () => {
      setNotice(`“${deleting ? labelOf(deleting) : ''}” is deleted.`);
      setDeleting(null);
      await qc.invalidateQueries({ queryKey: [key, accountSid] });
    },
  });
  /** Opens the editor on a rule (`new`, `new-criteria`, `new-type` or a sid), clearing the notice. */
  const open = (rule: string) => {
    setNotice(null);
    set({ rule });
  };
  /** Closes the editor, with a notice when given. */
  const close = (message?: string) => {
    if (message) setNotice(message);
    set({ rule: null, sampleRequest: null, sampleBucket: null });
  };
  return { editing: get('rule'), notice, deleting, setDeleting, list, toggle, remove, open, close };
}
