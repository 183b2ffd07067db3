import { useState, type FormEvent } from 'react';

/** The stream's search box: the search language, its error from the API and a clear button. */
export function SearchBar({
  q,
  error,
  onSearch,
}: {
  q: string;
  error?: string;
  onSearch: (q: string) => void;
}) {
  const [draft, setDraft] = useState(q);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSearch(draft.trim());
  };
  return (
    <form className="stream-search" role="search" onSubmit={submit}>
      <div className="stream-search-row">
        <label htmlFor="stream-q" className="sr-only">
          Search requests
        </label>
        <input
          id="stream-q"
          type="search"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          placeholder="status:>=500 method:POST path:/api/* duration:>250"
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? 'stream-q-error' : 'stream-q-help'}
          spellCheck={false}
          autoComplete="off"
        />
        <button type="submit" className="btn btn-primary">
          Search
        </button>
        {q ? (
          <button type="button" className="btn" onClick={() => onSearch('')}>
            Clear
          </button>
        ) : null}
        <details className="syntax-help">
          <summary>Syntax</summary>
          <div id="stream-q-help" className="syntax-pop">
            <p>
              Terms separated by spaces; every term must match. A leading <code>-</code> negates.
            </p>
            <ul>
              <li>
                <code>status:5xx</code> <code>status:&gt;=400</code> <code>status:200..299</code>
              </li>
              <li>
                <code>method:POST</code> <code>method:PUT,PATCH</code>
              </li>
              <li>
                <code>path:/api/*</code> <code>endpoint:/users/{'{id}'}</code> <code>-path:/health</code>
              </li>
              <li>
                <code>duration:&gt;250</code> <code>duration:1s..5s</code>
              </li>
              <li>
                <code>env:prod01</code> <code>host:*.example.com</code> <code>direction:out</code>
              </li>
              <li>
                <code>tag:team=core</code> <code>blocked:true</code> <code>&quot;two words&quot;</code>
              </li>
              <li>A bare word matches the path, ignoring case.</li>
            </ul>
          </div>
        </details>
      </div>
      {error ? (
        <div id="stream-q-error" className="field-error" role="alert">
          {error}
        </div>
      ) : null}
    </form>
  );
}
