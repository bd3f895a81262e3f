/**
 * Config values are read the way the reference reads them: trimmed and case-insensitive (`" ALL "` ≡ `"all"`).
 * Returns the canonical spelling, or `undefined` when the value is not one of `choices`.
 */
export function normalizeChoice<const T extends string>(
  value: unknown,
  choices: readonly T[],
): T | undefined {
  if (typeof value !== "string") return undefined;
  const folded = value.trim().toLowerCase();
  return choices.find((choice) => choice === folded);
}
