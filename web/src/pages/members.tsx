/** Replaced by the members page. */
export function MembersPage() {
  return (
    <div className="page">
      <h1>Members</h1>
    </div>
  );
}
