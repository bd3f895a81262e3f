import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { GatewayEvent } from "../gateway.js";
import { REPLAY_ENDED_RUNS_KEPT, REPLAY_KEPT_MS, RunReplay } from "./run-replay.js";

type Step = { kind: "text"; text: string } | { kind: "tool"; name: string } | { kind: "guard" };

/** The events a run emits for `steps`, numbered as the gateway numbers them, ending with its final event. */
function eventsOf(runId: string, steps: readonly Step[]): GatewayEvent[] {
  let seq = 0;
  const out: GatewayEvent[] = [
    { type: "agent", runId, seq: ++seq, stream: "lifecycle", ts: 1, data: { phase: "start" } },
  ];
  for (const step of steps) {
    if (step.kind === "text") {
      out.push({ type: "chat", runId, sessionKey: "s", seq: ++seq, state: "delta", deltaText: step.text });
      out.push({ type: "agent", runId, seq: ++seq, stream: "assistant", ts: 1, data: { text: step.text } });
    } else if (step.kind === "tool") {
      out.push({ type: "agent", runId, seq: ++seq, stream: "tool", ts: 1, data: { name: step.name } });
    } else {
      out.push({ type: "agent", runId, seq: ++seq, stream: "guard", ts: 1, data: { code: "loop" } });
    }
  }
  out.push({ type: "agent", runId, seq: ++seq, stream: "lifecycle", ts: 1, data: { phase: "end" } });
  out.push({ type: "chat", runId, sessionKey: "s", seq: ++seq, state: "final" });
  return out;
}

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("text" as const), text: fc.string({ maxLength: 8 }) }),
  fc.record({ kind: fc.constant("tool" as const), name: fc.string({ maxLength: 4 }) }),
  fc.constant({ kind: "guard" as const }),
);

/** A replay read as its viewer would: streamed text between other events, and the other events in order. */
function reading(events: ReturnType<RunReplay["events"]>) {
  const segments: string[] = [];
  const others: string[] = [];
  let text = "";
  for (const { event, payload } of events) {
    if (event === "chat" && payload.state === "delta") text += payload.deltaText ?? "";
    else if (event === "agent" && payload.stream === "assistant") continue;
    else {
      segments.push(text);
      text = "";
      others.push(
        event === "chat" ? `chat:${payload.state}` : `${payload.stream}:${JSON.stringify(payload.data)}`,
      );
    }
  }
  return { segments, others };
}

describe("the events a late follower is handed back", () => {
  it("keep every event of a run in seq order, its streamed text joined between the other events", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), fc.integer({ min: 0, max: 60 }), (steps, cut) => {
        const replay = new RunReplay(() => 0);
        const all = eventsOf("r1", steps);
        // Another run's events in between change nothing of this one's.
        for (const event of all.slice(0, cut)) {
          replay.record(event);
          replay.record({ ...event, runId: "other" } as GatewayEvent);
        }
        const sofar = all.slice(0, cut);
        const got = replay.events("r1");
        const seqs = got.map((e) => e.payload.seq);
        expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
        // The newest event so far is always there: a live event after the replay continues it.
        expect(Math.max(0, ...seqs)).toBe(Math.max(0, ...sofar.map((e) => ("seq" in e ? e.seq : 0))));
        const want = reading(sofar.map(({ type, ...payload }) => ({ event: type, payload }) as never));
        expect(reading(got)).toEqual(want);
        // Once the run has ended, both streams of text hold the same text.
        if (cut < all.length) return;
        const chatText = got.filter((e) => e.event === "chat" && e.payload.state === "delta");
        const agentText = got.filter((e) => e.event === "agent" && e.payload.stream === "assistant");
        expect(chatText.map((e) => e.payload.deltaText).join("")).toBe(
          agentText.map((e) => (e.payload.data as { text: string }).text).join(""),
        );
      }),
    );
  });

  it("are forgotten a minute after the run's end, and beyond the newest ended runs kept", () => {
    let now = 0;
    const replay = new RunReplay(() => now);
    for (const event of eventsOf("first", [{ kind: "text", text: "hi" }])) replay.record(event);
    for (const event of eventsOf("live", [{ kind: "text", text: "hi" }]).slice(0, 2)) replay.record(event);
    now = REPLAY_KEPT_MS - 1;
    expect(replay.events("first").at(-1)).toMatchObject({ event: "chat", payload: { state: "final" } });
    now = REPLAY_KEPT_MS + 1;
    expect(replay.events("first")).toEqual([]);
    // A run under way is kept however long it runs.
    expect(replay.events("live")).toHaveLength(2);
    for (let i = 0; i <= REPLAY_ENDED_RUNS_KEPT; i++) {
      for (const event of eventsOf(`r${i}`, [])) replay.record(event);
    }
    expect(replay.events("r0")).toEqual([]);
    expect(replay.events(`r${REPLAY_ENDED_RUNS_KEPT}`)).toHaveLength(3);
    expect(replay.size()).toBe(REPLAY_ENDED_RUNS_KEPT + 1);
  });

  it("ignore events of a run after its final one", () => {
    const replay = new RunReplay(() => 0);
    const events = eventsOf("r", []);
    for (const event of events) replay.record(event);
    replay.record({ type: "agent", runId: "r", seq: 99, stream: "tool", ts: 1, data: {} });
    expect(replay.events("r").map((e) => e.payload.seq)).toEqual([1, 2, 3]);
  });
});
