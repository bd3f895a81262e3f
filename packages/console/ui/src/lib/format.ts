/** Short, locale-neutral times for dense tables. */
export function ago(ts: number | undefined, now = Date.now()): string {
  if (ts === undefined) return "—";
  const s = Math.max(0, Math.round((now - ts) / 1000));
  if (s < 60) return `${s}s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m}m ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h}h ago`;
  return `${Math.round(h / 24)}d ago`;
}

export function clock(ts: number | undefined): string {
  if (ts === undefined) return "";
  const d = new Date(ts);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A session's name for people: its label, display name, or key. */
export function nameOf(row: {
  key: string;
  label?: string | undefined;
  displayName?: string | undefined;
}): string {
  return row.label || row.displayName || row.key;
}
