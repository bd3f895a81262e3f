import { trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import type { ScriptedAgent } from "../runner/scripted.js";
import {
  eventually,
  type Harness,
  harness,
  STORE_KINDS,
  seedTreeSessions,
  TREE_OPS,
  treeMessage,
} from "../test-kit.js";
import { memorySpans } from "./memory-spans.fixture.js";

const OPS = TREE_OPS;
const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

const agent: ScriptedAgent = async (turn) => {
  if (turn.kind === "ping_pong") return turn.sessionKey === OPS ? "REPLY_SKIP" : "main, turn 1";
  if (turn.kind === "announce") return "Deploy approved";
  if (turn.kind === "subagent") return "Result: three papers";
  if (turn.kind === "subagent_announce") return "Result: three papers";
  if (turn.sessionKey === OPS) return "round one";
  if (turn.text !== "go") return "hello";
  await turn.callTool("sessions_send", { sessionKey: OPS, message: "deploy?", timeoutSeconds: 0 });
  await turn.callTool("sessions_spawn", { task: "research" });
  return { reply: "on it", usage: { inputTokens: 120, outputTokens: 7, totalTokens: 127 } };
};
const config = { tools: { sessions: { visibility: "agent" as const } } };

const { exporter, provider } = memorySpans();

describe.each(STORE_KINDS)("OpenTelemetry traces on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    exporter.reset();
  });

  /** The main session sends to #ops and spawns a sub-agent; resolves once all three deliveries are out. */
  async function tree(traceparent?: string, { traced = true } = {}) {
    h = await harness(kind, { main: agent }, { config });
    await seedTreeSessions(h);
    await eventually(() => expect(h.channel.sent).toHaveLength(2));
    exporter.reset();
    const { runId } = await h.gateway.chat.send({
      sessionKey: "main",
      message: "go",
      idempotencyKey: "k-go",
      deliver: true,
      ...(traceparent === undefined ? {} : { traceparent }),
    });
    await eventually(async () => {
      const runs = (await h.gateway.runs.tree({ runId })).runs;
      expect(runs.map((run) => run.status)).toEqual(Array(runs.length).fill("ok"));
      expect(runs.flatMap((run) => run.deliveries.map((d) => d.status))).toEqual([
        "delivered",
        "delivered",
        "delivered",
      ]);
      if (!traced) return;
      expect(exporter.getFinishedSpans().filter((s) => s.name.startsWith("deliver "))).toHaveLength(3);
      expect(exporter.getFinishedSpans().filter((s) => s.name.startsWith("invoke_agent "))).toHaveLength(
        runs.length,
      );
    }, "the tree to end, deliver and be traced");
    return { runId, runs: (await h.gateway.runs.tree({ runId })).runs };
  }

  const parentId = (span: ReadableSpan) => span.parentSpanContext?.spanId;

  it("traces a tree as one trace under the caller's span: request, runs, tools, deliveries", async () => {
    const { runId, runs } = await tree(`00-${CALLER_TRACE}-${CALLER_SPAN}-01`);
    const spans = exporter.getFinishedSpans();
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([CALLER_TRACE]));
    const runSpan = (id: string) => {
      const found = spans.find(
        (s) => s.name.startsWith("invoke_agent") && s.attributes["sessions.run_id"] === id,
      );
      expect(found, `the span of run ${id}`).toBeDefined();
      return found as ReadableSpan;
    };
    const tool = (name: string) => spans.find((s) => s.name === `execute_tool ${name}`) as ReadableSpan;
    const byKind = (k: string) => runs.filter((run) => run.kind === k).map((run) => runSpan(run.runId));

    const [request] = spans.filter((s) => s.name === "chat.send");
    expect(parentId(request as ReadableSpan)).toBe(CALLER_SPAN);
    const root = runSpan(runId);
    expect(parentId(root)).toBe(request?.spanContext().spanId);
    expect(root.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.id": "main",
      "gen_ai.agent.name": "main",
      "gen_ai.conversation.id": (await h.store.getEntry("agent:main:main"))?.sessionId,
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 7,
      "sessions.key": "agent:main:main",
      "sessions.run_id": runId,
      "sessions.run_kind": "chat",
    });
    expect(tool("sessions_send").attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "sessions_send",
      "gen_ai.tool.call.id": `${runId}:1`,
      "gen_ai.tool.type": "function",
      "sessions.key": "agent:main:main",
      "sessions.sandboxed": false,
      "sessions.run_id": runId,
    });
    for (const name of ["sessions_send", "sessions_spawn"])
      expect(parentId(tool(name))).toBe(root.spanContext().spanId);
    const [send] = byKind("inter_session");
    expect(parentId(send as ReadableSpan)).toBe(tool("sessions_send").spanContext().spanId);
    for (const followUp of [...byKind("ping_pong"), ...byKind("announce")])
      expect(parentId(followUp)).toBe(send?.spanContext().spanId);
    const [child] = byKind("subagent");
    expect(parentId(child as ReadableSpan)).toBe(tool("sessions_spawn").spanContext().spanId);
    expect(parentId(byKind("subagent_announce")[0] as ReadableSpan)).toBe(child?.spanContext().spanId);
    // Each delivery attempt under (and linked to) the run it went out for.
    for (const delivery of spans.filter((s) => s.name.startsWith("deliver "))) {
      const run = runSpan(String(delivery.attributes["sessions.run_id"]));
      expect(parentId(delivery)).toBe(run.spanContext().spanId);
      expect(delivery.links.map((link) => link.context.spanId)).toEqual([run.spanContext().spanId]);
      expect(delivery.attributes["sessions.delivery_outcome"]).toBe("delivered");
    }
    // Every span is accounted for: one request, a span per run, two tools, three deliveries.
    expect(spans).toHaveLength(1 + runs.length + 2 + 3);
    // The stored context of each run is its own span's: what a restart or another gateway continues from.
    for (const run of runs) {
      const stored = await h.store.getRun(run.runId);
      expect(stored?.traceparent).toBe(`00-${CALLER_TRACE}-${runSpan(run.runId).spanContext().spanId}-01`);
    }
  });

  it("starts a trace of its own without a caller, and traces an inbound message's tree", async () => {
    await tree();
    const spans = exporter.getFinishedSpans();
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    expect(spans.find((s) => s.name === "chat.send")?.parentSpanContext).toBeUndefined();
    exporter.reset();
    const inbound = await h.gateway.receive(
      treeMessage("alice", "hello", {
        messageId: "m-7",
        traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      }),
    );
    await h.gateway.agentWait({ runId: inbound.runId as string, timeoutMs: 60_000 });
    await eventually(() => expect(exporter.getFinishedSpans().map((s) => s.name)).toContain("receive chat"));
    const receive = exporter.getFinishedSpans().find((s) => s.name === "receive chat") as ReadableSpan;
    expect(receive.attributes).toMatchObject({ "messaging.message.id": "m-7", "sessions.channel": "chat" });
    expect(parentId(receive)).toBe(CALLER_SPAN);
    expect(receive.spanContext().traceId).toBe(CALLER_TRACE);
  });

  it("with no tracer provider, records nothing and hands the caller's context down the tree", async () => {
    trace.disable();
    try {
      const caller = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
      const { runs } = await tree(caller, { traced: false });
      expect(runs.length).toBeGreaterThan(3);
      for (const run of runs) expect((await h.store.getRun(run.runId))?.traceparent).toBe(caller);
      expect(exporter.getFinishedSpans()).toEqual([]);
    } finally {
      trace.setGlobalTracerProvider(provider);
    }
  });

  it("refuses a traceparent that is not one, naming the field; an adapter's is ignored, never its message", async () => {
    h = await harness(kind, { main: agent }, { config });
    await expect(
      h.gateway.chat.send({ sessionKey: "main", message: "x", idempotencyKey: "k", traceparent: "nope" }),
    ).rejects.toMatchObject({ code: "invalid_params", field: "traceparent" });
    const received = await h.gateway.receive(treeMessage("alice", "hello", { traceparent: "nope" }));
    await h.gateway.agentWait({ runId: received.runId as string, timeoutMs: 60_000 });
    await eventually(() => expect(exporter.getFinishedSpans().map((s) => s.name)).toContain("receive chat"));
    expect(
      exporter.getFinishedSpans().find((s) => s.name === "receive chat")?.parentSpanContext,
    ).toBeUndefined();
  });
});
