/** Replaced by the stream page (live tail, search, saved views). */
export function StreamPage() {
  return (
    <div className="page">
      <h1>Stream</h1>
    </div>
  );
}
