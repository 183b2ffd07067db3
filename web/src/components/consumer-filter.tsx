import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { consumers } from '../api/resources';
import { useMetricsScope } from '../lib/metrics-scope';
import { useAccountSid, useSession } from '../lib/session';
import { useQueryState } from '../lib/url-state';

/** Suggestions shown while typing: the busiest consumers whose id, name or group contain the text. */
const SUGGESTIONS = 20;
/** Typing pauses this long before the consumers list is asked again. */
const DEBOUNCE_MS = 250;

/**
 * The consumer every traffic page narrows to (`?consumer=<id>`): the metrics calls get
 * `consumer=`, the stream the `consumer:` search term. A bucket may have 100,000 consumers, so
 * nothing is listed up front: typing asks the consumers list (`q`, the bucket, environment and
 * range in view) for the busiest matches, offered as suggestions. Picking one, or Enter, applies
 * it; emptying the field or "Clear" removes it.
 */
export function ConsumerFilter() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const { get, set } = useQueryState();
  const { scope } = useMetricsScope();
  const current = get('consumer') ?? '';
  const [draft, setDraft] = useState(current);
  const [text, setText] = useState('');
  const [focused, setFocused] = useState(false);
  // Another page, a link or Back changes the URL: the field shows what is applied.
  useEffect(() => setDraft(current), [current]);
  useEffect(() => {
    const t = setTimeout(() => setText(draft.trim()), DEBOUNCE_MS);
    return () => clearTimeout(t);
  }, [draft]);
  const query = {
    bucketSid: scope.bucketSid,
    environmentSid: scope.environmentSid,
    startDate: scope.startDate,
    endDate: scope.endDate,
    q: text || undefined,
    sort: 'requests' as const,
    limit: SUGGESTIONS,
  };
  // Asked only while the field is in use: a page view costs nothing until someone types.
  const suggestions = useQuery({
    queryKey: ['consumers', accountSid, 'filter', query],
    queryFn: () => consumers.list(accountSid, query),
    enabled: focused && can('metrics:read'),
    placeholderData: keepPreviousData,
    staleTime: 30_000,
  });
  if (!can('metrics:read')) return null;
  const options = suggestions.data?.records ?? [];
  const apply = (value: string) => {
    const id = value.trim();
    if (id !== current) set({ consumer: id || null });
  };
  return (
    <form
      className="switcher consumer-filter"
      role="search"
      aria-label="Consumer filter"
      onSubmit={(e) => {
        e.preventDefault();
        apply(draft);
      }}
    >
      <label className="switcher-label" htmlFor="consumer-filter">
        Consumer
      </label>
      <input
        id="consumer-filter"
        type="search"
        list="consumer-filter-options"
        placeholder="All consumers"
        value={draft}
        maxLength={256}
        autoComplete="off"
        spellCheck={false}
        title={current ? `Showing the traffic of consumer ${current}` : 'Type an id, name or group'}
        onFocus={() => setFocused(true)}
        onBlur={() => setFocused(false)}
        onChange={(e) => {
          const v = e.target.value;
          setDraft(v);
          // A suggestion picked from the list (not typed), or the field emptied, applies at once.
          const input = e.nativeEvent as Partial<InputEvent>;
          const typed = input.inputType !== undefined && input.inputType !== 'insertReplacementText';
          if (v === '' || (!typed && options.some((c) => c.id === v))) apply(v);
        }}
      />
      <datalist id="consumer-filter-options">
        {options.map((c) => (
          <option key={c.id} value={c.id}>
            {[c.name, c.group].filter(Boolean).join(' · ') || c.id}
          </option>
        ))}
      </datalist>
      {current ? (
        <button
          type="button"
          className="btn btn-small btn-ghost"
          aria-label="Clear the consumer filter"
          onClick={() => apply('')}
        >
          Clear
        </button>
      ) : null}
    </form>
  );
}
