/** Replaced by the request detail page. */
export function RequestPage() {
  return (
    <div className="page">
      <h1>Request</h1>
    </div>
  );
}
