import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createGatewayClient } from "@sessions/gateway-client";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, "cli.ts");
const runner = join(here, "tree-runner.fixture.ts");
const dir = mkdtempSync(join(tmpdir(), "sessions-tracing-"));
const token = "tracing-test-token";
const OPS = "agent:main:chat:group:ops";
const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

/** A span as an OTLP/HTTP JSON request carries it, with the resource's service name. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
  service: unknown;
}
type Value = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type Attribute = { key: string; value: Value };
const attributes = (list: Attribute[] = []) =>
  Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.stringValue ??
        (value.intValue === undefined ? (value.doubleValue ?? value.boolValue) : Number(value.intValue)),
    ]),
  );

/** A real OTLP/HTTP receiver on loopback: keeps every span of every JSON request, and the raw protobuf ones. */
function otlpReceiver() {
  const spans: OtlpSpan[] = [];
  const protobuf: Buffer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.url !== "/v1/traces" || req.method !== "POST") {
        res.writeHead(404).end();
        return;
      }
      if (req.headers["content-type"]?.startsWith("application/x-protobuf")) {
        protobuf.push(body);
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
        return;
      }
      const request = JSON.parse(body.toString("utf8")) as {
        resourceSpans: {
          resource?: { attributes?: Attribute[] };
          scopeSpans: {
            spans: (Omit<OtlpSpan, "attributes" | "service"> & { attributes?: Attribute[] })[];
          }[];
        }[];
      };
      for (const resource of request.resourceSpans) {
        const service = attributes(resource.resource?.attributes)["service.name"];
        for (const scope of resource.scopeSpans)
          for (const span of scope.spans)
            spans.push({ ...span, attributes: attributes(span.attributes), service });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  return {
    spans,
    protobuf,
    listen: () =>
      new Promise<string>((resolve) =>
        server.listen(0, "127.0.0.1", () =>
          resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
        ),
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const receiver = otlpReceiver();
let endpoint = "";
const children = new Set<ChildProcess>();

beforeAll(async () => {
  endpoint = await receiver.listen();
});
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `sessions-gateway serve` with these args and variables; resolves with its URL once it listens. */
function serve(args: string[], env: Record<string, string>) {
  return new Promise<{ child: ChildProcess; url: string; log: () => string }>((resolve, reject) => {
    let log = "";
    const child = spawn(process.execPath, ["--import", "tsx", cli, "serve", "--port", "0", ...args], {
      cwd: here,
      env: { ...process.env, SESSIONS_GATEWAY_TOKEN: token, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(child);
    const read = (d: Buffer) => {
      log += String(d);
      const match = /listening (ws:\/\/\S+)/.exec(log);
      if (match) resolve({ child, url: match[1] as string, log: () => log });
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.on("exit", (code) => {
      children.delete(child);
      reject(new Error(`serve exited ${code}: ${log}`));
    });
  });
}

/** SIGTERM, as an operator stops it: the gateway drains and the exporter flushes before it exits. */
function stop(child: ChildProcess) {
  return new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

describe("serve exports traces over OTLP/HTTP", () => {
  it("traces a tree as one trace with every parent in place, across a restart in the middle", async () => {
    const db = join(dir, "tree.db");
    const gate = join(dir, "gate");
    const config = join(dir, "tree.json5");
    writeFileSync(
      config,
      "{ tools: { sessions: { visibility: 'agent' } }, session: { agentToAgent: { maxPingPongTurns: 2 } } }",
    );
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "tree-test",
      TREE_RUNNER_GATE: gate,
    };
    const args = ["--config", config, "--db", db, "--runner", runner, "--drain-ms", "200"];
    const first = await serve(args, env);
    await eventually(() =>
      expect(first.log()).toContain(`traces → ${endpoint} (http/json, service tree-test)`),
    );
    const client = createGatewayClient({ url: first.url, token, reconnect: false });
    await client.agent({ sessionKey: OPS, message: "hi", idempotencyKey: "ops-hi" });
    const { runId: root } = await client.chat.send({
      sessionKey: "main",
      message: "go",
      idempotencyKey: "go",
      traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
    });
    // The sub-agent has announced, and #ops's reply-back turn waits at the gate: restart now.
    await eventually(async () => {
      const runs = (await client.runs.tree({ runId: root })).runs;
      expect(runs.find((run) => run.kind === "subagent_announce")?.status).toBe("ok");
      expect(runs.find((run) => run.kind === "ping_pong" && run.sessionKey === OPS)?.status).toBe("running");
    }, "the tree to reach #ops's reply-back turn");
    await client.close();
    await stop(first.child);

    writeFileSync(gate, "open");
    const second = await serve(args, env);
    const again = createGatewayClient({ url: second.url, token, reconnect: false });
    let tree = await again.runs.tree({ runId: root });
    await eventually(async () => {
      tree = await again.runs.tree({ runId: root });
      expect(tree.runs.find((run) => run.kind === "announce")?.status).toBe("ok");
    }, "the resumed follow-up to announce");
    await again.close();
    await stop(second.child);

    const runs = tree.runs;
    const spanOf = (runId: string) => {
      const found = receiver.spans.filter(
        (s) => s.name.startsWith("invoke_agent ") && s.attributes["sessions.run_id"] === runId,
      );
      expect(found, `one span for run ${runId}`).toHaveLength(1);
      return found[0] as OtlpSpan;
    };
    const ofKind = (kind: string) => runs.filter((run) => run.kind === kind).map((run) => spanOf(run.runId));
    const rootSpan = spanOf(root);
    const tool = (name: string) =>
      receiver.spans.find(
        (s) => s.name === `execute_tool ${name}` && s.attributes["sessions.run_id"] === root,
      ) as OtlpSpan;
    const request = receiver.spans.find(
      (s) => s.name === "chat.send" && s.attributes["sessions.run_id"] === root,
    );
    const treeSpans = [
      request,
      rootSpan,
      tool("sessions_send"),
      tool("sessions_spawn"),
      ...runs.map((r) => spanOf(r.runId)),
    ];

    // One trace: the caller's.
    expect(new Set(treeSpans.map((s) => s?.traceId))).toEqual(new Set([CALLER_TRACE]));
    // Every parent where it belongs.
    expect(request?.parentSpanId).toBe(CALLER_SPAN);
    expect(rootSpan.parentSpanId).toBe(request?.spanId);
    expect(tool("sessions_send").parentSpanId).toBe(rootSpan.spanId);
    expect(tool("sessions_spawn").parentSpanId).toBe(rootSpan.spanId);
    const [send] = ofKind("inter_session");
    expect(send?.parentSpanId).toBe(tool("sessions_send").spanId);
    const [child] = ofKind("subagent");
    expect(child?.parentSpanId).toBe(tool("sessions_spawn").spanId);
    expect(ofKind("subagent_announce")[0]?.parentSpanId).toBe(child?.spanId);
    // The reply-back turns (the one the restart cut off, and the loop resumed after it) and the announce: under the
    // sessions_send run, whose context the second gateway read from the store.
    const followUps = [...ofKind("ping_pong"), ...ofKind("announce")];
    expect(followUps.length).toBeGreaterThanOrEqual(4);
    for (const span of followUps) expect(span.parentSpanId).toBe(send?.spanId);
    expect(new Set(ofKind("announce").map((s) => s.service))).toEqual(new Set(["tree-test"]));

    // The attributes.
    expect(rootSpan.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.id": "main",
      "gen_ai.agent.name": "main",
      "gen_ai.conversation.id": expect.any(String),
      "gen_ai.usage.input_tokens": expect.any(Number),
      "gen_ai.usage.output_tokens": expect.any(Number),
      "sessions.key": "agent:main:main",
      "sessions.run_id": root,
      "sessions.run_kind": "chat",
    });
    expect(send?.attributes).toMatchObject({ "sessions.key": OPS, "sessions.run_kind": "inter_session" });
    expect(tool("sessions_spawn").attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "sessions_spawn",
      "gen_ai.tool.call.id": `${root}:2`,
    });
  });

  it("sends protobuf by default, and loads nothing without an endpoint", async () => {
    const db = join(dir, "proto.db");
    const traced = await serve(["--db", db], { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces` });
    await eventually(() => expect(traced.log()).toContain("(http/protobuf, service sessions-gateway)"));
    const client = createGatewayClient({ url: traced.url, token, reconnect: false });
    const { runId } = await client.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "p1" });
    await client.agentWait({ runId, timeoutMs: 60_000 });
    await client.close();
    await stop(traced.child);
    const body = Buffer.concat(receiver.protobuf).toString("latin1");
    expect(body).toContain("invoke_agent main");
    expect(body).toContain(runId);

    const plain = await serve(["--db", join(dir, "plain.db")], {});
    await eventually(() => expect(plain.log()).toContain("console "));
    expect(plain.log()).not.toContain("traces →");
    await stop(plain.child);
    const bad = await serve(["--db", join(dir, "bad.db")], {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
    }).catch((error: Error) => error.message);
    expect(bad).toContain(
      "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: use http/protobuf or http/json",
    );
  });
});
