import { parseSessionKey } from "@sessions/core";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import type { GatewayEvent } from "../gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { cleanupDirs, openStore } from "../test-kit.js";
import { agentIdOfKey } from "./key-agent.js";

afterAll(cleanupDirs);

describe("run events when someone listens", () => {
  it("a subscriber that arrives while a run is under way hears its end, in order", async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const runner = createScriptedRunner({
      agents: {},
      fallback: async (turn) => {
        await gate;
        turn.say("hel");
        return "hello";
      },
    });
    const gateway = createGateway({ runner, store: openStore("sqlite").store });
    await gateway.ready;
    // No one listens when the run starts: its start event is not raised at all.
    const { runId } = await gateway.agent({ sessionKey: "main", message: "hi", idempotencyKey: "k1" });
    const heard: GatewayEvent[] = [];
    const unsubscribe = gateway.subscribe((event) => heard.push(event));
    release();
    expect(await gateway.agentWait({ runId, timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
      reply: "hello",
    });
    const ofRun = heard.filter((e) => "runId" in e && e.runId === runId) as (GatewayEvent & {
      seq: number;
    })[];
    expect(ofRun.map((e) => [e.type, "state" in e ? e.state : "stream" in e ? e.stream : ""])).toEqual([
      ["chat", "delta"],
      ["agent", "assistant"],
      ["agent", "lifecycle"],
      ["chat", "final"],
    ]);
    const seqs = ofRun.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(heard.some((e) => e.type === "sessions.changed")).toBe(true);

    // Once the last subscriber leaves, runs still end and are recorded as before.
    unsubscribe();
    const quiet = heard.length;
    const second = await gateway.agent({ sessionKey: "main", message: "again", idempotencyKey: "k2" });
    expect(await gateway.agentWait({ runId: second.runId, timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
    });
    expect(heard.length).toBe(quiet);
    const history = await gateway.chat.history({ sessionKey: "main" });
    expect(history.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    await gateway.close();
  });
});

describe("agentIdOfKey", () => {
  it("names the agent parseSessionKey names, on every call for a key", () => {
    const segment = fc.stringMatching(/^[A-Za-z0-9_@.-]{0,8}$/);
    const key = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => parts.join(":")),
      fc
        .tuple(segment, fc.array(segment, { minLength: 1, maxLength: 4 }))
        .map(([agent, rest]) => `agent:${agent}:${rest.join(":")}`),
    );
    fc.assert(
      fc.property(key, (k) => {
        const expected = parseSessionKey(k)?.agentId;
        expect(agentIdOfKey(k)).toBe(expected);
        expect(agentIdOfKey(k)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});
