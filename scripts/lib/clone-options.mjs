// The options of the scripts that work on a fresh clone of a commit (flake-hunt, release-rehearsal).
import { resolve } from "node:path";

/** The defaults of the clone options: the committed HEAD, a temporary work folder, no JSON file, clones removed. */
export const cloneDefaults = () => ({ ref: "HEAD", dir: undefined, json: undefined, keep: false });

/**
 * Reads `arg` into `opts` when it is one of `--ref <git ref>`, `--dir <work folder>`, `--json <file>`, `--keep`
 * (`value()` takes the next argument); false when it is none of them.
 */
export function cloneOption(opts, arg, value) {
  if (arg === "--ref") opts.ref = value();
  else if (arg === "--dir") opts.dir = resolve(value());
  else if (arg === "--json") opts.json = resolve(value());
  else if (arg === "--keep") opts.keep = true;
  else return false;
  return true;
}
