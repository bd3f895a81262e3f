import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { ScriptedAgent } from "../runner/scripted.js";
import { cleanupDirs, type Harness, harness, STORE_KINDS } from "../test-kit.js";

afterAll(cleanupDirs);

const echo: ScriptedAgent = (turn) => `echo: ${turn.text}`;
const group = (peerId: string) => ({
  channel: "chat",
  chatType: "group" as const,
  peerId,
  senderId: "bob",
  to: `group:${peerId}`,
  text: "hi",
});
const DEV = "agent:main:chat:group:dev";
const OPS = "agent:main:chat:group:ops";

describe.each(STORE_KINDS)("a session's own visibility on the %s store (sessions.patch)", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  const visibleFrom = async (key: string) =>
    ((await h.gateway.callTool(key, "sessions_list", {})) as { sessions: { key: string }[] }).sessions
      .map((s) => s.key)
      .sort();

  it("overrides the configured visibility for that session only, and null restores it", async () => {
    h = await harness(kind, { main: echo }, { config: { tools: { sessions: { visibility: "agent" } } } });
    for (const peer of ["dev", "ops"]) {
      const { runId } = await h.gateway.receive(group(peer));
      await h.gateway.agentWait({ runId: runId as string });
    }
    expect(await visibleFrom(DEV)).toEqual([DEV, OPS]);

    const patched = (await h.gateway.call("sessions.patch", { key: DEV, visibility: "self" })) as {
      entry: { visibility?: string };
    };
    expect(patched.entry.visibility).toBe("self");
    expect(await visibleFrom(DEV)).toEqual([DEV]);
    expect(await visibleFrom(OPS)).toEqual([DEV, OPS]);
    const listed = (await h.gateway.call("sessions.list", {})) as {
      sessions: { key: string; visibility?: string }[];
    };
    expect(listed.sessions.find((s) => s.key === DEV)?.visibility).toBe("self");

    await h.gateway.call("sessions.patch", { key: DEV, visibility: null });
    expect(await visibleFrom(DEV)).toEqual([DEV, OPS]);
  });

  it("still clamps a sandboxed session to its tree, whatever its override says", async () => {
    h = await harness(kind, { main: echo }, { config: { tools: { sessions: { visibility: "tree" } } } });
    for (const peer of ["dev", "ops"]) {
      const { runId } = await h.gateway.receive(group(peer));
      await h.gateway.agentWait({ runId: runId as string });
    }
    await h.gateway.call("sessions.patch", { key: DEV, visibility: "agent" });
    expect(await visibleFrom(DEV)).toEqual([DEV, OPS]);
    const tools = await h.gateway.tools(DEV, { sandboxed: true });
    const list = tools.find((t) => t.name === "sessions_list");
    const sandboxed = (await list?.execute({})) as { sessions: { key: string }[] };
    expect(sandboxed.sessions.map((s) => s.key)).toEqual([DEV]);
  });

  it("refuses a value that is not a visibility, naming the field", async () => {
    h = await harness(kind, { main: echo });
    const { runId } = await h.gateway.receive(group("dev"));
    await h.gateway.agentWait({ runId: runId as string });
    await expect(
      h.gateway.call("sessions.patch", { key: DEV, visibility: "everyone" }),
    ).rejects.toMatchObject({
      code: "invalid_params",
      field: "visibility",
    });
  });
});
