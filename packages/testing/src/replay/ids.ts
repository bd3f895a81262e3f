/**
 * Ids in recordings: the UUIDs a gateway gives runs, sessions of sub-agents and deliveries (v4 and v7), and epoch
 * milliseconds. Two recordings of the same exchange differ only there; replays pair them up and compare the rest.
 */
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** An ISO-8601 UTC time in a text (`2026-11-25T09:40:24.123Z`). */
const ISO_TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g;

/** The run time an announce states (`runtime 3s`, `runtime 1m5s`, `runtime n/a`): it depends on the machine. */
const RUNTIME = /\bruntime (?:n\/a|\d+[hms](?:\d+[ms])?)/g;

/** The ids in `text`, in order. */
export function idsIn(text: string): string[] {
  return text.match(UUID) ?? [];
}

/** `text` with every id replaced by `mask(id)`, ISO times by `<time>` and stated run times by `runtime <time>`. */
export function maskIds(text: string, mask: (id: string) => string = () => "<id>"): string {
  return text
    .replace(UUID, (id) => mask(id.toLowerCase()))
    .replace(ISO_TIME, "<time>")
    .replace(RUNTIME, "runtime <time>");
}

/** True for a number that reads as a time in epoch milliseconds (2001 to 2286). */
export function isEpochMs(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1e12 && value < 1e13;
}

/** What differs between two runs of one exchange besides ids and times (a temporary directory): masked text. */
export interface MaskOptions {
  /** Every match of each (give them the `g` flag) reads as `<masked>`, in comparisons and normalised recordings. */
  masks?: readonly RegExp[] | undefined;
}

/** `text` with the caller's `masks` applied. */
export function applyMasks(text: string, masks: readonly RegExp[] = []): string {
  return masks.reduce((out, mask) => out.replace(mask, "<masked>"), text);
}
