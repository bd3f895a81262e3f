import { describe, expect, it } from "vitest";
import { AgentEventPayloadSchema, ChatEventPayloadSchema } from "./event-payloads.js";
import { assistantMessage } from "./wire-events.js";

describe("event payload schemas", () => {
  it("accept a final chat event with OpenClaw's message shape, and the older string form", () => {
    const event = { runId: "r", sessionKey: "main", seq: 3, state: "final", message: assistantMessage("hi") };
    expect(ChatEventPayloadSchema.safeParse(event).success).toBe(true);
    expect(ChatEventPayloadSchema.safeParse({ ...event, message: "hi", extra: 1 }).success).toBe(true);
  });

  it("name what a payload lacks", () => {
    const chat = ChatEventPayloadSchema.safeParse({ sessionKey: "main", seq: 1, state: "delta" });
    expect(chat.success ? [] : chat.error.issues.map((i) => i.path.join("."))).toEqual(["runId"]);
    const agent = AgentEventPayloadSchema.safeParse({
      runId: "r",
      seq: "1",
      stream: "tool",
      ts: 1,
      data: {},
    });
    expect(agent.success ? [] : agent.error.issues.map((i) => i.path.join("."))).toEqual(["seq"]);
  });
});
