import { useState } from 'react';
import { PRESETS, TIME_ZONE, toLocalInput } from '../lib/time';
import { useQueryState, useRange } from '../lib/url-state';

/** Time range: presets ending now, or a custom range (kept in the URL as range/from/to). */
export function RangePicker() {
  const { set } = useQueryState();
  const range = useRange();
  const [custom, setCustom] = useState(range.id === 'custom');
  const [from, setFrom] = useState(toLocalInput(range.start));
  const [to, setTo] = useState(toLocalInput(range.end));
  return (
    <div className="range-picker" role="group" aria-label="Time range">
      <select
        aria-label="Time range"
        value={custom ? 'custom' : range.id}
        onChange={(e) => {
          if (e.target.value === 'custom') setCustom(true);
          else {
            setCustom(false);
            set({ range: e.target.value, from: null, to: null });
          }
        }}
      >
        {PRESETS.map((p) => (
          <option key={p.id} value={p.id}>
            {p.label}
          </option>
        ))}
        <option value="custom">Custom…</option>
      </select>
      {custom ? (
        <form
          className="custom-range"
          onSubmit={(e) => {
            e.preventDefault();
            const s = new Date(from);
            const en = new Date(to);
            if (s < en) set({ range: 'custom', from: s.toISOString(), to: en.toISOString() });
          }}
        >
          <label>
            <span className="sr-only">From</span>
            <input type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} required />
          </label>
          <span aria-hidden="true">→</span>
          <label>
            <span className="sr-only">To</span>
            <input type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} required />
          </label>
          <button type="submit" className="btn btn-small" disabled={!(new Date(from) < new Date(to))}>
            Apply
          </button>
        </form>
      ) : null}
      <span className="muted tz" title="Times are shown in your browser's time zone">
        {TIME_ZONE}
      </span>
    </div>
  );
}
