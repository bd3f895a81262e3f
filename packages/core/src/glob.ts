/**
 * Case-insensitive `*` globs matched in linear time: the pattern is split at `*` into literals that must appear
 * in order (first anchored at the start, last at the end), each found with Knuth–Morris–Pratt, so no input can
 * make matching backtrack.
 */
export interface GlobMatcher {
  readonly pattern: string;
  /** Whether `value` matches the pattern (case-insensitive). */
  test(value: string): boolean;
}

function failureTable(needle: string): Int32Array {
  const table = new Int32Array(needle.length);
  let k = 0;
  for (let i = 1; i < needle.length; i++) {
    while (k > 0 && needle[i] !== needle[k]) k = table[k - 1] as number;
    if (needle[i] === needle[k]) k++;
    table[i] = k;
  }
  return table;
}

function indexOfKmp(
  haystack: string,
  needle: string,
  table: Int32Array,
  from: number,
  until: number,
): number {
  if (needle.length === 0) return from;
  let k = 0;
  for (let i = from; i < until; i++) {
    while (k > 0 && haystack[i] !== needle[k]) k = table[k - 1] as number;
    if (haystack[i] === needle[k]) k++;
    if (k === needle.length) return i - needle.length + 1;
  }
  return -1;
}

/** A blank pattern (empty or only whitespace) matches nothing: an allow list fails closed, never open. */
const NOTHING = (pattern: string): GlobMatcher => ({ pattern, test: () => false });

/** Compiles a case-insensitive `*` glob; a blank pattern matches nothing. */
export function compileGlob(pattern: string): GlobMatcher {
  const lower = typeof pattern === "string" ? pattern.trim().toLowerCase() : "";
  if (lower === "") return NOTHING(lower);
  const parts = lower.split("*");
  if (parts.length === 1) {
    return { pattern: lower, test: (value) => typeof value === "string" && value.toLowerCase() === lower };
  }
  const head = parts[0] as string;
  const tail = parts[parts.length - 1] as string;
  const middle = parts.slice(1, -1).filter((p) => p !== "");
  const tables = middle.map(failureTable);
  return {
    pattern: lower,
    test(value: string): boolean {
      if (typeof value !== "string") return false;
      const v = value.toLowerCase();
      if (v.length < head.length + tail.length) return false;
      if (!v.startsWith(head) || !v.endsWith(tail)) return false;
      let pos = head.length;
      const end = v.length - tail.length;
      for (let i = 0; i < middle.length; i++) {
        const needle = middle[i] as string;
        const at = indexOfKmp(v, needle, tables[i] as Int32Array, pos, end);
        if (at === -1) return false;
        pos = at + needle.length;
      }
      return true;
    },
  };
}
