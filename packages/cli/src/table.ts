/** Renders rows as an aligned text table (columns in the order given). */
export function formatTable(rows: readonly Record<string, unknown>[], columns: readonly string[]): string {
  const cell = (value: unknown): string => {
    if (value === undefined || value === null) return "";
    if (typeof value === "number" && value > 1e12)
      return new Date(value).toISOString().replace("T", " ").slice(0, 19);
    if (typeof value === "object") return JSON.stringify(value);
    return String(value).replace(/\s+/g, " ");
  };
  const body = rows.map((row) => columns.map((c) => cell(row[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...body.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((text, i) => text.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...body.map(line)].join("\n");
}
