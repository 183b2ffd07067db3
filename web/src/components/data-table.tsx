import type { ReactNode, TableHTMLAttributes } from 'react';

/**
 * A list table: a wrapper that scrolls sideways inside its panel on a narrow screen, a header row
 * of column names (an empty name is the row actions' column, named for screen readers only; a
 * `numeric` one is aligned for figures) and the rows. Other table attributes (`data-testid`, `aria-label`) pass through to the `<table>`.
 */
export function DataTable({
  columns,
  wrapClassName,
  children,
  ...table
}: {
  columns: (string | { label: string; numeric: true })[];
  wrapClassName?: string;
  children: ReactNode;
} & TableHTMLAttributes<HTMLTableElement>) {
  return (
    <div className={wrapClassName ? `table-wrap ${wrapClassName}` : 'table-wrap'}>
      <table className="table" {...table}>
        <thead>
          <tr>
            {columns.map((c, i) =>
              typeof c === 'string' ? (
                <th key={i} scope="col">
                  {c || <span className="sr-only">Actions</span>}
                </th>
              ) : (
                <th key={i} scope="col" className="num">
                  {c.label}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
