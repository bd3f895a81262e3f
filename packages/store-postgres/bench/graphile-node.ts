/**
 * The Node that runs graphile-worker (0.18 needs Node >= 22.18) beside the gateways of the benches: GRAPHILE_NODE,
 * else the Node 22 of the `node` npm package that the workspace installs for apps/interop-openclaw (not a
 * devDependency here: its `node` bin would take the place of Node 20 in every script of this package, its tests in
 * CI included).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** The path of a Node >= 22.18; throws (saying why) when there is none. */
export function graphileNode(): string {
  let path = process.env.GRAPHILE_NODE;
  if (path === undefined || path === "") {
    const from = createRequire(join(here, "..", "..", "..", "apps", "interop-openclaw", "package.json"));
    const manifest = from.resolve("node/package.json");
    const bin = (JSON.parse(readFileSync(manifest, "utf8")) as { bin: { node: string } }).bin.node;
    path = join(dirname(manifest), bin);
  }
  const version = nodeVersion(path);
  const [major = 0, minor = 0] = version.split(".").map(Number);
  if (major < 22 || (major === 22 && minor < 18)) {
    throw new Error(`${path} is Node ${version}; graphile-worker 0.18 needs >= 22.18`);
  }
  return path;
}

/** `process.versions.node` of the Node at `path`. */
export const nodeVersion = (path: string): string =>
  execFileSync(path, ["-p", "process.versions.node"], { encoding: "utf8" }).trim();
