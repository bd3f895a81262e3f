// The public packages of the workspace (every packages/* that is not private), and packing them as npm would.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const root = resolve(import.meta.dirname, "..", "..");

/**
 * `{ dir, manifest }` of every public package of the workspace at `workspace` (this one by default), read now, in a
 * stable order. New packages are picked up by themselves.
 */
export function publicPackages(workspace = root) {
  return readdirSync(join(workspace, "packages"), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(workspace, "packages", d.name, "package.json")))
    .map((d) => join(workspace, "packages", d.name))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) }))
    .filter(({ manifest }) => manifest.private !== true)
    .sort((a, b) => a.manifest.name.localeCompare(b.manifest.name));
}

/** `pnpm pack` (which runs the prepack build guard) into `destination`; the absolute path of the tarball. */
export function pack(dir, destination) {
  try {
    const out = execFileSync("pnpm", ["pack", "--pack-destination", destination], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
    });
    return resolve(dir, out.trim().split("\n").pop());
  } catch (error) {
    // The prepack guard's one line says what is wrong and how to fix it.
    throw new Error(`pnpm pack in ${dir} failed: ${String(error.stderr ?? error.message).trim()}`);
  }
}
