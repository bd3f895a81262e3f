// The release rehearsal's registry (scripts/release-rehearsal.mjs): Verdaccio on 127.0.0.1.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";

import { commandEnv, must, run, running } from "./processes.mjs";

/** The Verdaccio version the rehearsal runs (6.10 and later want Node 22). */
export const VERDACCIO = "6.8.0";

// ---------------------------------------------------------------------------------------------------------------
// The registry.
// ---------------------------------------------------------------------------------------------------------------
/** Verdaccio's bin, installed once into the user's cache (never into the workspace or its lockfile). */
export async function installVerdaccio(log) {
  const dir = join(homedir(), ".cache", "sessions-release-rehearsal", `verdaccio-${VERDACCIO}`);
  const manifest = join(dir, "node_modules", "verdaccio", "package.json");
  const bin = join(dir, "node_modules", "verdaccio", "bin", "verdaccio");
  if (existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).version === VERDACCIO) return bin;
  mkdirSync(dir, { recursive: true });
  const pkg = {
    name: "sessions-release-rehearsal-registry",
    private: true,
    dependencies: { verdaccio: VERDACCIO },
    // verdaccio-audit asks for node-fetch's `cjs` tag; 2.7.0 is the CommonJS line that runs on Node 20.
    overrides: { "node-fetch": "2.7.0" },
  };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
  await must(run("npm", ["install", "--no-audit", "--no-fund"], { cwd: dir, log }), `npm install in ${dir}`);
  return bin;
}

export function freePort() {
  return new Promise((done, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

export function verdaccioConfig(dir, port) {
  const quote = (text) => JSON.stringify(text);
  return `storage: ${quote(join(dir, "storage"))}
auth:
  htpasswd:
    file: ${quote(join(dir, "htpasswd"))}
    max_users: 10
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
    timeout: 120s
    max_fails: 20
    fail_timeout: 10s
packages:
  # No proxy: @sessions/* comes only from what the rehearsal published (the real npm may hold the scope).
  "@sessions/*":
    access: $all
    publish: $authenticated
    unpublish: $authenticated
  "**":
    access: $all
    publish: $authenticated
    proxy: npmjs
web:
  enable: false
max_body_size: 200mb
log: { type: stdout, format: pretty, level: warn }
listen: 127.0.0.1:${port}
`;
}

/** Starts Verdaccio on a free loopback port; resolves once it answers `/-/ping`. */
export async function startRegistry(bin, dir, logFile) {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const config = join(dir, "config.yaml");
  writeFileSync(config, verdaccioConfig(dir, port));
  const out = openSync(logFile, "a");
  const child = spawn(process.execPath, [bin, "--config", config, "--listen", `127.0.0.1:${port}`], {
    cwd: dir,
    env: commandEnv({}),
    detached: true,
    stdio: ["ignore", out, out],
  });
  running.add(child);
  child.on("exit", () => running.delete(child));
  const url = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Verdaccio exited ${child.exitCode} (see ${logFile})`);
    const ok = await fetch(`${url}-/ping`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return { url, child };
    if (Date.now() > deadline)
      throw new Error(`Verdaccio did not answer on ${url} within 60 s (see ${logFile})`);
    await new Promise((done) => setTimeout(done, 250));
  }
}

/** Creates the publishing user the way `npm adduser` does; resolves with its token. */
export async function addUser(url) {
  const name = "rehearsal";
  const password = randomBytes(16).toString("hex");
  const response = await fetch(`${url}-/user/org.couchdb.user:${name}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, password }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok || typeof body.token !== "string") {
    throw new Error(`adding a user answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return body.token;
}

/** An .npmrc that points everything, @sessions/* included, at the rehearsal registry. */
export function npmrc(url, token) {
  const lines = [`registry=${url}`, `@sessions:registry=${url}`];
  if (token !== undefined) lines.push(`${url.replace(/^https?:/, "")}:_authToken=${token}`);
  return `${lines.join("\n")}\n`;
}

export async function packument(url, name) {
  const response = await fetch(`${url}${name.replace("/", "%2f")}`);
  if (response.status === 404) return undefined;
  if (!response.ok) throw new Error(`GET ${name} answered ${response.status}`);
  return response.json();
}

/** Checks the registry holds every package at its version, as latest, with no `workspace:` range left in it. */
export async function checkPublished(url, packages) {
  const problems = [];
  for (const { manifest } of packages) {
    const doc = await packument(url, manifest.name);
    const published = doc?.versions?.[manifest.version];
    if (published === undefined) {
      problems.push(`${manifest.name}@${manifest.version} is not on the registry`);
      continue;
    }
    if (doc["dist-tags"]?.latest !== manifest.version) {
      problems.push(`${manifest.name}: latest is ${doc["dist-tags"]?.latest}, not ${manifest.version}`);
    }
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) {
      for (const [dep, range] of Object.entries(published[field] ?? {})) {
        if (/^(workspace|catalog|link|file):/.test(range)) {
          problems.push(
            `${manifest.name}@${manifest.version} was published with ${field} ${dep}: "${range}"`,
          );
        }
      }
    }
  }
  if (problems.length > 0) throw new Error(problems.join("\n"));
}
