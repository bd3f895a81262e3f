import { describe, expect, it } from "vitest";
import { normalizeRecording } from "./recording.js";
import { recordedRequests } from "./requests.js";
import { createReplayRunner, type ReplayRequest } from "./runner.js";

const ROOM = "agent:main:chat:group:ops";
const ids = ["0199a000-0000-7000-8000-000000000001", "0199a000-0000-7000-8000-000000000002"] as const;
const turn = (runId: string, kind: string, input: string) => ({
  v: 1,
  type: "turn",
  runId,
  agentId: "main",
  sessionKey: ROOM,
  kind,
  input,
  system: [],
  events: [],
  reply: `re: ${input}`,
});
const text = (lines: object[]) => lines.map((line) => `${JSON.stringify(line)}\n`).join("");
const live = (runId: string, input: string): ReplayRequest => ({
  runId,
  agentId: "main",
  sessionKey: ROOM,
  kind: "chat",
  input: { content: input },
  system: [],
  tools: [],
  emit: () => {},
});

describe("recordedRequests", () => {
  it("sends each root again keyed by its recorded run id, with what its request line recorded", () => {
    const lines = [
      {
        v: 1,
        type: "request",
        runId: ids[0],
        method: "agent",
        sessionKey: ROOM,
        budget: { runs: 3, seconds: 60 },
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        deliver: { channel: "telegram", to: "42", threadId: "7" },
      },
      turn(ids[0], "agent", "start"),
      {
        v: 1,
        type: "request",
        runId: "my-key",
        method: "chat.send",
        sessionKey: ROOM,
        deliver: { channel: "x" },
      },
      turn("my-key", "chat", "again"),
      // A second attempt of the same run (its lane was lost): one request.
      turn("my-key", "chat", "again"),
      turn(ids[1], "inter_session", "not a root"),
    ];
    expect(recordedRequests(lines)).toEqual([
      {
        runId: ids[0],
        method: "agent",
        params: {
          sessionKey: ROOM,
          message: "start",
          idempotencyKey: ids[0],
          budget: { runs: 3, seconds: 60 },
          traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
          deliver: true,
          channel: "telegram",
          to: "42",
          threadId: "7",
        },
      },
      // chat.send delivers to its session's own target: no channel or to.
      {
        runId: "my-key",
        method: "chat.send",
        params: { sessionKey: ROOM, message: "again", idempotencyKey: "my-key", deliver: true },
      },
    ]);
  });

  it("sends the roots of a recording made before requests were recorded without them", () => {
    expect(recordedRequests([turn(ids[0], "chat", "hi"), turn(ids[1], "agent", "start")])).toEqual([
      {
        runId: ids[0],
        method: "chat.send",
        params: { sessionKey: ROOM, message: "hi", idempotencyKey: ids[0] },
      },
      {
        runId: ids[1],
        method: "agent",
        params: { sessionKey: ROOM, message: "start", idempotencyKey: ids[1] },
      },
    ]);
  });
});

describe("the replay runner pairs turns by run id", () => {
  const recording = { text: text([turn(ids[0], "chat", "one"), turn(ids[1], "chat", "two")]) };

  it("answers a root from its own recorded turn, whatever order the session's roots come in", async () => {
    const runner = createReplayRunner(recording);
    expect(runner.requests.map((r) => r.params.idempotencyKey)).toEqual([ids[0], ids[1]]);
    expect(await runner.run(live(ids[1], "two"))).toEqual({ reply: "re: two" });
    expect(await runner.run(live(ids[0], "one"))).toEqual({ reply: "re: one" });
    runner.assertReplayed();
  });

  it("pairs a new run id with the recorded one, and a run id paired with another turn's is a divergence", async () => {
    const runner = createReplayRunner(recording);
    const other = "0199b000-0000-7000-8000-00000000000a";
    await runner.run(live(other, "one"));
    // `other` stands for the first recorded run now: as the second it contradicts that.
    await expect(runner.run(live(other, "two"))).rejects.toThrow(
      /#2 chat in .* was asked otherwise:\n {2}runId:/,
    );
  });
});

describe("normalizeRecording", () => {
  const lines = [
    { v: 1, type: "request", runId: ids[0], method: "chat.send", sessionKey: ROOM, budget: { runs: 1 } },
    turn(ids[0], "chat", "one"),
  ];

  it("leaves requests out unless asked for them, first", () => {
    expect(normalizeRecording({ text: text(lines) })).toBe(
      normalizeRecording({ text: text(lines.slice(1)) }),
    );
    expect(normalizeRecording({ text: text([...lines].reverse()) }, { requests: true })).toBe(
      `${JSON.stringify({ ...lines[0], runId: "<id1>" })}\n${JSON.stringify({ ...lines[1], runId: "<id1>" })}\n`,
    );
  });
});
