// What the operator's sections share: a table with column headers.

/** A table whose columns are `columns` (a "" column is announced as "Actions"). */
export function Table({ testId, caption, columns, children }) {
  return (
    <table data-testid={testId}>
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column || "actions"} scope="col">
              {column || <span className="visually-hidden">Actions</span>}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}
