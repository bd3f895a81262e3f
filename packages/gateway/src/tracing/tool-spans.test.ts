import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { connectRaw, eventually, type Harness, harness, STORE_KINDS } from "../test-kit.js";
import { memorySpans } from "./memory-spans.fixture.js";

const MAIN = "agent:main:main";
const OPS = "agent:main:chat:group:ops";
const config = { tools: { sessions: { visibility: "agent" as const } } };

const { exporter } = memorySpans();

/** Calls one method over a raw WebSocket connection (an operator with every scope). */
async function callOverWire(url: string, token: string, method: string, params: unknown) {
  const client = await connectRaw(url, token);
  try {
    expect(client.hello.ok).toBe(true);
    return await client.call(method, params);
  } finally {
    client.close();
  }
}

describe.each(STORE_KINDS)("execute_tool spans of sessions.tools.call on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    exporter.reset();
  });

  const parentId = (span: ReadableSpan) => span.parentSpanContext?.spanId;
  const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
  /** The request span and its `execute_tool` child, once both have ended. */
  async function toolCall(tool: string) {
    await eventually(() => {
      expect(named("sessions.tools.call")).toHaveLength(1);
      expect(named(`execute_tool ${tool}`)).toHaveLength(1);
    }, `the sessions.tools.call and execute_tool ${tool} spans`);
    const [request] = named("sessions.tools.call") as [ReadableSpan];
    const [span] = named(`execute_tool ${tool}`) as [ReadableSpan];
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(request.attributes["sessions.key"]).toBe(MAIN);
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(parentId(span)).toBe(request.spanContext().spanId);
    expect(span.spanContext().traceId).toBe(request.spanContext().traceId);
    return { request, span };
  }

  it("in process (gateway.call) and over the wire: a request span with an execute_tool child", async () => {
    h = await harness(kind, {});
    await h.gateway.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "k-hi" });
    exporter.reset();

    const listed = (await h.gateway.call("sessions.tools.call", {
      requesterKey: "main",
      name: "sessions_list",
      params: {},
    })) as { count: number };
    expect(listed.count).toBe(1);
    const inProcess = await toolCall("sessions_list");
    expect(inProcess.request.parentSpanContext).toBeUndefined();
    expect(inProcess.span.attributes).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "sessions_list",
      "gen_ai.tool.type": "function",
      "sessions.key": MAIN,
      "sessions.sandboxed": false,
    });
    expect(inProcess.span.status.code).toBe(SpanStatusCode.UNSET);
    exporter.reset();

    const server = await h.gateway.listen({ port: 0, auth: { token: "wire-t0ken" } });
    try {
      const answer = await callOverWire(server.url, "wire-t0ken", "sessions.tools.call", {
        requesterKey: "main",
        name: "agents_list",
        params: {},
        sandboxed: true,
      });
      expect(answer).toMatchObject({ ok: true, payload: { requester: "main" } });
    } finally {
      await server.close();
    }
    const wire = await toolCall("agents_list");
    expect(wire.span.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "agents_list",
      "sessions.key": MAIN,
      "sessions.sandboxed": true,
    });
  });

  it("sets the error status when the tool answers an error, and on the request too when it throws", async () => {
    h = await harness(kind, {});
    await h.gateway.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "k-hi" });
    exporter.reset();

    const self = (await h.gateway.call("sessions.tools.call", {
      requesterKey: "main",
      name: "sessions_send",
      params: { sessionKey: "main", message: "me?" },
    })) as { status: string };
    expect(self.status).toBe("error");
    const answered = await toolCall("sessions_send");
    expect(answered.span.status.code).toBe(SpanStatusCode.ERROR);
    expect(answered.span.attributes["error.type"]).toBe("tool_error");
    // The request itself succeeded: it answered the tool's result.
    expect(answered.request.status.code).toBe(SpanStatusCode.UNSET);
    exporter.reset();

    await expect(
      h.gateway.call("sessions.tools.call", { requesterKey: "main", name: "sessions_history", params: {} }),
    ).rejects.toMatchObject({ code: "invalid_params" });
    const thrown = await toolCall("sessions_history");
    expect(thrown.span.status.code).toBe(SpanStatusCode.ERROR);
    expect(thrown.span.attributes["error.type"]).toBe("exception");
    expect(thrown.request.status.code).toBe(SpanStatusCode.ERROR);
    expect(thrown.request.attributes["error.type"]).toBe("invalid_params");
  });

  it("a run the call starts is a child of its execute_tool span, with no request span of its own", async () => {
    h = await harness(kind, { main: async () => "pong" }, { config });
    await h.gateway.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "k-hi" });
    await h.gateway.chat.send({ sessionKey: OPS, message: "hi", idempotencyKey: "k-ops" });
    await eventually(async () => {
      const runs = await h.gateway.runs.list({});
      expect(runs.runs).toEqual([]);
    }, "the seed runs to end");
    await eventually(
      () =>
        expect(exporter.getFinishedSpans().filter((s) => s.name.startsWith("invoke_agent"))).toHaveLength(2),
      "the seed runs to be traced",
    );
    exporter.reset();

    const sent = (await h.gateway.callTool("main", "sessions_send", {
      sessionKey: OPS,
      message: "ping",
      timeoutSeconds: 60,
    })) as { status: string; runId: string };
    expect(sent).toMatchObject({ status: "ok", reply: "pong" });
    const { request, span } = await toolCall("sessions_send");
    await eventually(
      () =>
        expect(exporter.getFinishedSpans().some((s) => s.attributes["sessions.run_id"] === sent.runId)).toBe(
          true,
        ),
      "the run's span",
    );
    const run = exporter
      .getFinishedSpans()
      .find((s) => s.attributes["sessions.run_id"] === sent.runId) as ReadableSpan;
    expect(run.name).toBe("invoke_agent main");
    expect(parentId(run)).toBe(span.spanContext().spanId);
    expect(run.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    expect(named("sessions.tools.call")).toHaveLength(1);
  });

  it("a broadcast by label: one execute_tool span, each target's run a child of it", async () => {
    h = await harness(kind, { main: async () => "pong" }, { config });
    const rooms = [OPS, "agent:main:chat:group:dev"];
    for (const key of ["main", ...rooms]) {
      await h.gateway.chat.send({ sessionKey: key, message: "hi", idempotencyKey: `k-${key}` });
    }
    for (const key of rooms) await h.gateway.sessions.patch({ key, label: "team" });
    await eventually(async () => expect((await h.gateway.runs.list({})).runs).toEqual([]), "the seed runs");
    await eventually(
      () =>
        expect(exporter.getFinishedSpans().filter((s) => s.name.startsWith("invoke_agent"))).toHaveLength(3),
      "the seed runs to be traced",
    );
    exporter.reset();

    const sent = (await h.gateway.callTool("main", "sessions_send", {
      label: "team",
      message: "ping",
      timeoutSeconds: 60,
    })) as { status: string; targets: { runId: string }[] };
    expect(sent.status).toBe("ok");
    const { span } = await toolCall("sessions_send");
    const runIds = sent.targets.map((target) => target.runId);
    await eventually(
      () =>
        expect(
          exporter.getFinishedSpans().filter((s) => runIds.includes(String(s.attributes["sessions.run_id"]))),
        ).toHaveLength(2),
      "each target's run span",
    );
    for (const run of exporter
      .getFinishedSpans()
      .filter((s) => runIds.includes(String(s.attributes["sessions.run_id"])))) {
      expect(parentId(run)).toBe(span.spanContext().spanId);
    }
  });
});
