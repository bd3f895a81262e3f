import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GatewayMethodName } from "@sessions/core";
import {
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type Gateway,
  type GatewayServer,
} from "@sessions/gateway";
import type { ValidateFunction } from "ajv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventViolations, payloadViolations } from "./client-schemas.js";
import { type DriveReport, driveOpenClawClient, openClawSchemas } from "./openclaw-reference.js";

/**
 * OpenClaw's published client (`@openclaw/gateway-client` 2026.9.1, on Node 22) against our gateway: every exchange
 * it makes is checked against OpenClaw's published protocol schema and read back with OpenClaw's own helpers.
 */
const TOKEN = "interop-token";
let dir: string;
let gateway: Gateway;
let server: GatewayServer;
let report: DriveReport;
let schema: (definition: string) => ValidateFunction;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sessions-interop-"));
  gateway = createGateway({
    store: createSqliteStore({ path: join(dir, "sessions.db") }),
    runner: createScriptedRunner({ agents: { main: (turn) => `echo: ${turn.text}` } }),
  });
  // A tick a second, for the driver to see one soon (a real gateway ticks every 30 s).
  server = await gateway.listen({ host: "127.0.0.1", port: 0, auth: { token: TOKEN }, tickIntervalMs: 1000 });
  schema = openClawSchemas();
  report = await driveOpenClawClient(server.url, TOKEN);
});

afterAll(async () => {
  await server?.close();
  await gateway?.close({ drainMs: 0 });
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Schema errors of `value` against OpenClaw's `definition` (empty when it conforms). */
function violations(definition: string, value: unknown): string[] {
  const validate = schema(definition);
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

const result = (name: string) => {
  const entry = report.results[name];
  if (entry === undefined) throw new Error(`the driver made no ${name} call`);
  return entry;
};
const payload = (name: string): Record<string, unknown> => {
  const entry = result(name);
  expect(entry, `${name} failed: ${JSON.stringify(entry.error)}`).toMatchObject({ ok: true });
  return entry.payload as Record<string, unknown>;
};
const chatEvents = () => report.events.filter((e) => e.event === "chat").map((e) => e.payload);

describe("OpenClaw's published client against our gateway", () => {
  it("connects: our hello-ok passes OpenClaw's HelloOkSchema", () => {
    expect(violations("HelloOk", report.hello)).toEqual([]);
    expect(report.hello).toMatchObject({
      type: "hello-ok",
      protocol: 4,
      snapshot: { presence: [], stateVersion: { presence: 0, health: 0 } },
      // Our extensions, and how this gateway maps direct chats to sessions (a web chat keys its visitor by it).
      features: { capabilities: ["agent.spawnedBy", "sessions.subscribe.replay", "session.dmScope=main"] },
    });
  });

  it("refuses a wrong token the way OpenClaw's client understands: AUTH_TOKEN_MISMATCH, no reconnect", () => {
    const { error, paused, hello } = report.wrongToken;
    expect(hello).toBeNull();
    expect(error).toMatchObject({ code: "INVALID_REQUEST", detailCode: "AUTH_TOKEN_MISMATCH" });
    const { code, message, details, retryable } = error as Record<string, unknown>;
    expect(violations("ErrorShape", { code, message, details, retryable })).toEqual([]);
    // The client classifies it as terminal and stops retrying.
    expect(paused).toMatchObject({ code: 1008, detailCode: "AUTH_TOKEN_MISMATCH" });
  });

  it("lists sessions with rows that pass OpenClaw's SessionRow", () => {
    expect(payload("listBefore")).toMatchObject({ count: 0, sessions: [] });
    const list = payload("list");
    const rows = list.sessions as Record<string, unknown>[];
    expect(rows.map((r) => [r.key, r.kind])).toEqual([["agent:main:main", "direct"]]);
    for (const row of rows) expect(violations("SessionRow", row)).toEqual([]);
  });

  it("reads history OpenClaw's way: an unknown key is empty, sequences come from __openclaw.seq", () => {
    const history = payload("history");
    expect((history.messages as unknown[]).length).toBe(4);
    expect(report.historySequences).toEqual([1, 2, 3, 4]);
    expect(payload("historyUnknown")).toMatchObject({ messages: [], totalMessages: 0, hasMore: false });
  });

  it("patches a session and reports the same kind as its list row", () => {
    const patched = payload("patch");
    const row = (payload("list").sessions as Record<string, unknown>[])[0];
    expect(patched).toMatchObject({ ok: true, key: "agent:main:main", entry: { label: "from openclaw" } });
    expect((patched.entry as Record<string, unknown>).kind).toBe(row?.kind);
    expect(violations("SessionRow", patched.entry)).toEqual([]);
    expect(violations("SessionsResolveResult", payload("resolve"))).toEqual([]);
  });

  it("sends chat with the idempotency key as the run id, and waits for it with agent.wait", () => {
    expect(payload("chatSend")).toEqual({ runId: "oc-send-1", status: "started" });
    expect(payload("chatSendAgain")).toMatchObject({ runId: "oc-send-1" });
    expect(payload("chatWait")).toMatchObject({
      runId: "oc-send-1",
      status: "ok",
      reply: "echo: hello from openclaw",
    });
  });

  it("starts an agent run and waits for it", () => {
    const accepted = payload("agent");
    expect(accepted).toMatchObject({ status: "accepted", sessionKey: "agent:main:main" });
    expect(typeof accepted.acceptedAt).toBe("number");
    expect(payload("agentWait")).toMatchObject({
      runId: accepted.runId,
      status: "ok",
      reply: "echo: work, please",
    });
  });

  it("accepts our agent { spawnedBy } extension, which our hello-ok announces", () => {
    expect(payload("spawnedBy")).toMatchObject({ status: "accepted", sessionKey: "agent:main:child" });
  });

  it("lists agents as OpenClaw's AgentsListResult, as sent", () => {
    const agents = payload("agentsList");
    expect(violations("AgentsListResult", agents)).toEqual([]);
    expect(agents).toEqual({
      defaultId: "main",
      mainKey: "main",
      scope: "per-sender",
      agents: [{ id: "main" }],
    });
  });

  it("sends events that pass OpenClaw's EventFrame, ChatEvent, AgentEvent and TickEvent", () => {
    const byName = new Map<string, string>([
      ["chat", "ChatEvent"],
      ["agent", "AgentEvent"],
      ["tick", "TickEvent"],
    ]);
    expect(new Set(report.events.map((e) => e.event))).toEqual(new Set(["agent", "chat", "tick"]));
    for (const frame of report.events) {
      expect(violations("EventFrame", frame)).toEqual([]);
      expect(violations(byName.get(frame.event) as string, frame.payload), frame.event).toEqual([]);
    }
  });

  it("ends each run with a final event OpenClaw's projection reads as completed, with the reply", () => {
    const finals = chatEvents().filter((e) => e.state === "final");
    expect(finals.map((e) => e.runId)).toEqual([
      "oc-send-1",
      payload("agent").runId,
      payload("spawnedBy").runId,
    ]);
    expect(finals[0]?.message).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "echo: hello from openclaw" }],
    });
    expect(report.projections.map((p) => p.run?.status)).toEqual(["completed", "completed", "completed"]);
    expect(report.projections[0]?.run?.message).toEqual(finals[0]?.message);
  });

  it("sends only payloads and events our own client's schemas accept", () => {
    const methods: Record<string, GatewayMethodName> = {
      listBefore: "sessions.list",
      list: "sessions.list",
      chatSend: "chat.send",
      chatSendAgain: "chat.send",
      chatWait: "agent.wait",
      agent: "agent",
      agentWait: "agent.wait",
      history: "chat.history",
      historyUnknown: "chat.history",
      patch: "sessions.patch",
      resolve: "sessions.resolve",
      agentsList: "agents.list",
      spawnedBy: "agent",
    };
    expect(Object.keys(report.results).sort()).toEqual(Object.keys(methods).sort());
    for (const [name, method] of Object.entries(methods)) {
      expect(payloadViolations(method, payload(name)), name).toEqual([]);
    }
    for (const frame of report.events) expect(eventViolations(frame), frame.event).toEqual([]);
  });
});
