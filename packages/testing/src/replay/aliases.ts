import { applyMasks, idsIn, isEpochMs, maskIds } from "./ids.js";

/**
 * The ids of a live exchange paired with the recorded ones they stand for (a run id, a sub-agent's session): bound
 * the first time a live value is compared with its recorded counterpart, then used both ways — recorded tool
 * params are sent with live ids, live keys are looked up as recorded ones.
 */
export class IdAliases {
  private readonly toRecorded = new Map<string, string>();
  private readonly toLive = new Map<string, string>();

  /** `masks`: text that differs between runs besides ids and times (see `MaskOptions`). */
  constructor(private readonly masks: readonly RegExp[] = []) {}

  /** `text` (live) with every id bound so far written as its recorded one. */
  recorded(text: string): string {
    return maskIds(text, (id) => this.toRecorded.get(id) ?? id);
  }

  /** `value` (recorded) with every id bound so far written as its live one, strings at any depth. */
  live<T>(value: T): T {
    if (typeof value === "string") return maskIds(value, (id) => this.toLive.get(id) ?? id) as T;
    if (Array.isArray(value)) return value.map((v) => this.live(v)) as T;
    if (value !== null && typeof value === "object")
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.live(v)])) as T;
    return value;
  }

  /** Whether a recorded id is bound to a live one yet. */
  has(recordedId: string): boolean {
    return this.toLive.has(recordedId);
  }

  /**
   * Compares a recorded value with a live one, binding the ids where both have one at the same place, times
   * (epoch ms at any depth, ISO times in text) counting as equal. Returns the differences, one line each, by path.
   */
  compare(recorded: unknown, live: unknown, path = ""): string[] {
    if (typeof recorded === "string" && typeof live === "string")
      return this.compareText(recorded, live, path);
    if (isEpochMs(recorded) && isEpochMs(live)) return [];
    if (Array.isArray(recorded) && Array.isArray(live)) {
      const out: string[] = [];
      const n = Math.max(recorded.length, live.length);
      for (let i = 0; i < n; i++) {
        if (i >= recorded.length) out.push(`${path}[${i}]: not recorded, now ${show(live[i])}`);
        else if (i >= live.length) out.push(`${path}[${i}]: recorded ${show(recorded[i])}, now missing`);
        else out.push(...this.compare(recorded[i], live[i], `${path}[${i}]`));
      }
      return out;
    }
    if (isObject(recorded) && isObject(live)) {
      const out: string[] = [];
      for (const key of new Set([...Object.keys(recorded), ...Object.keys(live)])) {
        const at = path === "" ? key : `${path}.${key}`;
        if (!(key in live)) out.push(`${at}: recorded ${show(recorded[key])}, now missing`);
        else if (!(key in recorded)) out.push(`${at}: not recorded, now ${show(live[key])}`);
        else out.push(...this.compare(recorded[key], live[key], at));
      }
      return out;
    }
    return Object.is(recorded, live)
      ? []
      : [`${path || "value"}: recorded ${show(recorded)}, now ${show(live)}`];
  }

  private compareText(recordedText: string, liveText: string, path: string): string[] {
    const recorded = applyMasks(recordedText, this.masks);
    const live = applyMasks(liveText, this.masks);
    const r = idsIn(recorded).map((id) => id.toLowerCase());
    const l = idsIn(live).map((id) => id.toLowerCase());
    const same = maskIds(recorded) === maskIds(live) && r.length === l.length;
    if (same) {
      const pairs = r.map((id, i) => [id, l[i] as string] as const);
      // An id already paired with another stands for something else: that is a difference, not a new pair.
      const clash = pairs.some(
        ([rid, lid]) =>
          (this.toLive.has(rid) && this.toLive.get(rid) !== lid) ||
          (this.toRecorded.has(lid) && this.toRecorded.get(lid) !== rid),
      );
      if (!clash) {
        for (const [rid, lid] of pairs) {
          this.toLive.set(rid, lid);
          this.toRecorded.set(lid, rid);
        }
        return [];
      }
    }
    return [`${path || "text"}:\n    recorded ${show(recorded)}\n    now      ${show(this.recorded(live))}`];
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
