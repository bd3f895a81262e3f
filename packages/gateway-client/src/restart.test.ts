import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, describe, expect, it } from "vitest";
import { createGatewayClient } from "./index.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sessions-restart-"));
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function startGatewayProcess(db: string, port: number): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(here, "gateway-process.fixture.ts"), db, String(port), "t0ken"],
      {
        cwd: here,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.add(child);
    let out = "";
    let err = "";
    child.stderr?.on("data", (d) => {
      err += String(d);
    });
    child.stdout?.on("data", (d) => {
      out += String(d);
      const match = /listening (\d+)/.exec(out);
      if (match) resolve({ child, port: Number(match[1]) });
    });
    child.on("exit", (code) => reject(new Error(`gateway process exited (${code}): ${err}`)));
  });
}

describe("a gateway process killed with SIGKILL and restarted", () => {
  it("resolves a waitRun in flight with the persisted outcome, and answers for runs that ended before", async () => {
    const db = join(dir, "gw.db");
    const first = await startGatewayProcess(db, 0);
    const client = createGatewayClient({
      url: `ws://127.0.0.1:${first.port}`,
      token: "t0ken",
      reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
    });
    try {
      const done = await client.agent({ message: "quick", idempotencyKey: "q-1" });
      expect(await client.waitRun(done.runId)).toMatchObject({ status: "ok", reply: "echo: quick" });
      const slow = await client.agent({ message: "slow", idempotencyKey: "s-1" });
      const waiting = client.waitRun(slow.runId);
      // Killed while the run is in progress (not while it is still queued): the outcome says which.
      await eventually(
        async () =>
          (await client.runs.list()).runs.some((r) => r.runId === slow.runId && r.status === "running"),
        "the slow run to be running",
      );
      first.child.kill("SIGKILL");
      await new Promise((r) => first.child.once("exit", r));
      expect(client.state).not.toBe("closed");
      const second = await startGatewayProcess(db, first.port);
      await expect(waiting).resolves.toMatchObject({
        runId: slow.runId,
        status: "error",
        error: "gateway restarted while the run was in progress",
      });
      expect(await client.waitRun(done.runId)).toMatchObject({ status: "ok", reply: "echo: quick" });
      const again = await client.agent({ message: "slow", idempotencyKey: "s-1" });
      expect(again.runId).toBe(slow.runId);
      second.child.kill("SIGTERM");
      const code = await new Promise((r) => second.child.once("exit", r));
      expect(code).toBe(0);
    } finally {
      await client.close();
    }
  });
});
