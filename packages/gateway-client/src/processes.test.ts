import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { GATEWAY_METHODS, type GatewayMethodName } from "@sessions/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatewayClient, type GatewayClient } from "./index.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sessions-two-processes-"));
let child: ChildProcess;
let client: GatewayClient;

beforeAll(async () => {
  const port = await new Promise<number>((resolve, reject) => {
    child = spawn(
      process.execPath,
      ["--import", "tsx", join(here, "gateway-process.fixture.ts"), join(dir, "gw.db"), "0", "two"],
      {
        cwd: here,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout?.on("data", (d) => {
      out += String(d);
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on("exit", (code) => reject(new Error(`gateway process exited ${code}`)));
  });
  client = createGatewayClient({ url: `ws://127.0.0.1:${port}`, token: "two" });
  await client.ready();
});

afterAll(async () => {
  await client?.close();
  child?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("two processes over the wire", () => {
  it("round-trips every method the gateway announces", async () => {
    const called = new Set<GatewayMethodName>();
    const call = async <T>(method: GatewayMethodName, fn: () => Promise<T>): Promise<T> => {
      called.add(method);
      return fn();
    };
    expect(client.hello?.features.methods.sort()).toEqual([...GATEWAY_METHODS].sort());

    await call("sessions.subscribe", () => client.sessions.subscribe());
    const started = await call("agent", () => client.agent({ message: "one", idempotencyKey: "p-1" }));
    expect(
      await call("agent.wait", () => client.agentWait({ runId: started.runId, timeoutMs: 60_000 })),
    ).toMatchObject({ status: "ok", reply: "echo: one" });
    const sent = await call("chat.send", () =>
      client.chat.send({ sessionKey: "main", message: "two", idempotencyKey: "p-2" }),
    );
    await client.waitRun(sent.runId);
    expect(await call("chat.history", () => client.chat.history({ sessionKey: "main" }))).toMatchObject({
      totalMessages: 4,
    });
    expect(await call("chat.abort", () => client.chat.abort({ sessionKey: "main" }))).toEqual({
      ok: true,
      aborted: false,
      runIds: [],
    });
    expect(await call("sessions.list", () => client.sessions.list())).toMatchObject({ count: 1 });
    const found = await call("sessions.search", () => client.sessions.search({ query: "ECHO two" }));
    expect(found).toMatchObject({
      count: 1,
      hasMore: false,
      results: [{ key: "agent:main:main", matchedMessages: 1, messages: [{ seq: 4, role: "assistant" }] }],
    });
    const [best] = found.results[0]?.messages ?? [];
    expect(best?.highlights.map(([from, to]) => best.snippet.slice(from, to))).toEqual(["echo", "two"]);
    expect(
      await call("sessions.patch", () => client.sessions.patch({ key: "main", label: "home" })),
    ).toMatchObject({ entry: { label: "home" } });
    expect(await call("sessions.resolve", () => client.sessions.resolve({ label: "home" }))).toEqual({
      ok: true,
      key: "agent:main:main",
      agentId: "main",
    });
    expect(await call("agents.list", () => client.agents.list())).toMatchObject({ defaultId: "main" });
    const spawned = (await call("sessions.tools.call", () =>
      client.callTool({ requesterKey: "main", name: "sessions_spawn", params: { task: "look" } }),
    )) as { status: string; childSessionKey: string; runId: string };
    expect(spawned.status).toBe("accepted");
    // The sub-agent just spawned (and its announce) may be under way: whatever is listed is under way.
    const { runs } = await call("runs.list", () => client.runs.list());
    for (const run of runs) expect(["queued", "running"]).toContain(run.status);
    // The sub-agent's run was started by the direct tool call: a tree of its own.
    const { runs: childTree } = await call("runs.tree", () => client.runs.tree({ runId: spawned.runId }));
    expect(childTree[0]).toMatchObject({
      runId: spawned.runId,
      cause: { kind: "request", method: "sessions.tools.call" },
    });
    const deliveries = await call("deliveries.list", () => client.deliveries.list({ sessionKey: "main" }));
    expect(deliveries.deliveries).toEqual([]);
    await expect(call("deliveries.get", () => client.deliveries.get({ id: "nope" }))).rejects.toMatchObject({
      detailsCode: "NOT_FOUND",
    });
    await expect(
      call("deliveries.retry", () => client.request("deliveries.retry", { id: "nope" })),
    ).rejects.toMatchObject({ detailsCode: "NOT_FOUND" });
    expect(await call("bindings.list", () => client.request("bindings.list", {}))).toEqual({ bindings: [] });
    expect(
      await call("sessions.delete", () => client.sessions.delete({ key: spawned.childSessionKey })),
    ).toMatchObject({ deleted: true });
    await call("sessions.unsubscribe", () => client.sessions.unsubscribe());
    expect([...called].sort()).toEqual([...GATEWAY_METHODS].sort());
  });
});
