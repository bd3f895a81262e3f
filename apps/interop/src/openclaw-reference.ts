import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Ajv, type ValidateFunction } from "ajv";

/**
 * OpenClaw's published artefacts, installed by the private `interop-openclaw` package: its gateway client (run by
 * `drive.mjs` on the Node 22 that package ships, since the client needs Node >= 22.19) and its protocol schema.
 */
const require = createRequire(import.meta.url);
const referenceDir = dirname(require.resolve("interop-openclaw/package.json"));
const fromReference = createRequire(join(referenceDir, "package.json"));

/** The `node` binary of the `node` npm package (22.x), next to OpenClaw's client. */
export function referenceNode(): string {
  const manifest = fromReference.resolve("node/package.json");
  const bin = (JSON.parse(readFileSync(manifest, "utf8")) as { bin: { node: string } }).bin.node;
  return join(dirname(manifest), bin);
}

/** What `drive.mjs` reports (see that file): everything OpenClaw's client saw of a gateway. */
export interface DriveReport {
  wrongToken: {
    error: Record<string, unknown> | null;
    paused: Record<string, unknown> | null;
    hello: unknown;
  };
  hello: Record<string, unknown>;
  results: Record<
    string,
    { ok: boolean; payload?: Record<string, unknown>; error?: Record<string, unknown> }
  >;
  events: { type: string; event: string; payload: Record<string, unknown>; seq?: number }[];
  projections: { runId: string; run: Record<string, unknown> | null }[];
  historySequences: (number | null)[];
}

/** Runs OpenClaw's client against `url` in a child process on Node 22 and parses its report. */
export function driveOpenClawClient(url: string, token: string): Promise<DriveReport> {
  return new Promise((resolve, reject) => {
    execFile(
      referenceNode(),
      [join(referenceDir, "drive.mjs"), url, token],
      // Above drive.mjs's own 240 s backstop, so that it reports what it was waiting for; below the hook timeout.
      { cwd: referenceDir, timeout: 270_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`drive.mjs failed (${error.message}): ${stderr}\n${stdout}`));
          return;
        }
        try {
          resolve(JSON.parse(stdout) as DriveReport);
        } catch (parseError) {
          reject(new Error(`drive.mjs printed no report (${String(parseError)}): ${stdout}\n${stderr}`));
        }
      },
    );
  });
}

/** OpenClaw's published JSON Schema (`@openclaw/gateway-protocol/protocol.schema.json`), one validator per definition. */
export function openClawSchemas(): (definition: string) => ValidateFunction {
  const protocol = fromReference.resolve("@openclaw/gateway-protocol");
  const file = join(dirname(protocol), "..", "protocol.schema.json");
  const schema = JSON.parse(readFileSync(file, "utf8")) as {
    $id: string;
    definitions: Record<string, unknown>;
  };
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(schema);
  return (definition) => {
    if (!Object.hasOwn(schema.definitions, definition)) throw new Error(`no OpenClaw schema ${definition}`);
    const validate = ajv.getSchema(`${schema.$id}#/definitions/${definition}`);
    if (validate === undefined) throw new Error(`cannot compile OpenClaw schema ${definition}`);
    return validate;
  };
}
