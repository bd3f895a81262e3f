import { afterAll, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import type { AgentRunner, AgentRunRequest } from "../runner/types.js";
import { cleanupDirs, openStore } from "../test-kit.js";

afterAll(cleanupDirs);

const text = (m: { content: unknown }) =>
  typeof m.content === "string" ? m.content : JSON.stringify(m.content);

describe.each(["sqlite", "memory"] as const)("what a runner gets (%s store)", (kind) => {
  it("sees the history up to its input, as copies it may change, and only when it reads it", async () => {
    const seen: string[][] = [];
    const runner = createScriptedRunner({
      agents: {
        main: (turn) => {
          if (turn.text.startsWith("quiet")) return "shh";
          seen.push(turn.messages.map(text));
          // A script may change what it was given: the transcript stays as it was.
          for (const message of turn.messages) message.content = "changed";
          turn.messages.push({ role: "user", content: "pushed", ts: 0 });
          return `re: ${turn.text}`;
        },
      },
    });
    const gateway = createGateway({ runner, store: openStore(kind).store });
    await gateway.ready;
    for (const message of ["one", "quiet two", "three"]) {
      const sent = await gateway.chat.send({ sessionKey: "main", message, idempotencyKey: message });
      expect(await gateway.agentWait({ runId: sent.runId, timeoutMs: 60_000 })).toMatchObject({
        status: "ok",
      });
    }
    expect(seen).toEqual([["one"], ["one", "re: one", "quiet two", "shh", "three"]]);
    const history = await gateway.chat.history({ sessionKey: "main" });
    expect(history.messages.map(text)).toEqual(["one", "re: one", "quiet two", "shh", "three", "re: three"]);
    await gateway.close();
  });

  it("gets its tools and abort signal when it asks, and an abort reaches a run that never asked", async () => {
    let request: AgentRunRequest | undefined;
    let release = () => {};
    const runner: AgentRunner = {
      run(r) {
        request = r;
        // Never looks at r.signal: the gateway still ends the run when it is aborted.
        return new Promise((resolve) => {
          release = () => resolve({ reply: "late" });
        });
      },
    };
    const gateway = createGateway({ runner, store: openStore(kind).store });
    await gateway.ready;
    const sent = await gateway.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "k1" });
    await expect.poll(() => request).toBeDefined();
    const got = request as AgentRunRequest;
    expect(got.tools.map((t) => t.name)).toContain("sessions_list");
    expect(got.tools).toBe(got.tools);
    expect(await gateway.chat.abort({ sessionKey: "main" })).toMatchObject({ aborted: true });
    expect(await gateway.agentWait({ runId: sent.runId, timeoutMs: 60_000 })).toMatchObject({
      status: "error",
    });
    // Asked for after the abort: already aborted, with the reason.
    expect(got.signal.aborted).toBe(true);
    expect(String(got.signal.reason)).toContain("aborted");
    release();
    await gateway.close();
  });
});
