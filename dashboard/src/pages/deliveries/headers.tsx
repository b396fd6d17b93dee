/** A header map as a two-column table, or `empty` when there is none. */
export function Headers({ value, empty }: { value: Record<string, string> | null; empty: string }) {
  if (!value) return <p className="muted">{empty}</p>;
  return (
    <table className="headers">
      <tbody>
        {Object.entries(value).map(([name, v]) => (
          <tr key={name}>
            <th scope="row">{name}</th>
            <td>
              <code>{v}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
