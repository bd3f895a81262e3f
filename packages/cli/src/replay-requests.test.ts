import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createGatewayClient } from "@sessions/gateway-client";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, describe, expect, it } from "vitest";
import { hopLimitConfig, replayCli, serveProcesses } from "./serve-process.fixture.js";

// A recording whose requests carry what the README's snippets give them (random idempotency keys) and what a tree
// runs under (a budget, a trace context, a delivery target), replayed through the shipped CLI.
const dir = mkdtempSync(join(tmpdir(), "sessions-replay-requests-"));
const token = "replay-requests-token";
const room = (name: string) => `agent:main:chat:group:${name}`;
const here = dirname(fileURLToPath(import.meta.url));
const servers = serveProcesses(token);
const recording = join(dir, "chain.jsonl");
const traceparent = () => `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`;

afterAll(() => {
  servers.stop();
  rmSync(dir, { recursive: true, force: true });
});

const chainConfig = (maxHops: number) => hopLimitConfig(dir, "chain", maxHops);

/** `sessions-gateway replay` of `file` under `config`: its exit code and output. */
const replay = replayCli;

describe("replaying requests with random idempotency keys, a budget, a trace context and a delivery target", () => {
  const roots: string[] = [];
  const traces = [traceparent(), traceparent()];

  it("records a four-hop chain and a tree its budget stops", async () => {
    const url = await servers.serve([
      "--config",
      chainConfig(4),
      "--db",
      join(dir, "chain.db"),
      "--runner",
      join(here, "relay-runner.fixture.ts"),
      "--record",
      recording,
    ]);
    const client = createGatewayClient({ url, token, reconnect: false });
    try {
      for (const name of ["a", "b", "c"]) {
        // chat.send's run id is its idempotency key: a random one here, as clients make them.
        const { runId } = await client.chat.send({
          sessionKey: room(name),
          message: "hi",
          idempotencyKey: randomUUID(),
        });
        roots.push(runId);
        await client.agentWait({ runId, timeoutMs: 60_000 });
      }
      // a → b → c → a → b: four messages, the fifth refused (max_hops); the reply goes to telegram (no adapter here).
      const { runId: chain } = await client.agent({
        sessionKey: room("a"),
        message: "start",
        idempotencyKey: randomUUID(),
        budget: { runs: 40, seconds: 600 },
        traceparent: traces[0],
        deliver: true,
        channel: "telegram",
        to: "42",
      });
      roots.push(chain);
      await eventually(async () => {
        const tree = await client.runs.tree({ runId: chain });
        const sends = tree.runs.filter((run) => run.kind === "inter_session");
        expect(sends.map((run) => run.hops).sort()).toEqual([1, 2, 3, 4]);
        expect(tree.runs.flatMap((run) => run.guards ?? []).map((g) => g.code)).toEqual(["max_hops"]);
        expect(tree.runs.every((run) => run.status === "ok")).toBe(true);
        for (const send of sends) expect(send.deliveries.map((d) => d.kind)).toContain("announce");
        const deliveries = tree.runs.flatMap((run) => run.deliveries);
        expect(deliveries.filter((d) => d.status === "queued")).toEqual([]);
        expect(deliveries.filter((d) => d.kind === "reply").map((d) => d.status)).toEqual(["failed"]);
      }, "the chain's runs ended, every send's announce and the reply's delivery recorded");
      // #c's message passed on would be the tree's second run: its budget refuses it.
      const { runId: stopped } = await client.chat.send({
        sessionKey: room("c"),
        message: "start",
        idempotencyKey: randomUUID(),
        budget: { runs: 1 },
        traceparent: traces[1],
      });
      roots.push(stopped);
      const waited = await client.agentWait({ runId: stopped, timeoutMs: 60_000 });
      expect(waited).toMatchObject({ status: "ok" });
      const tree = await client.runs.tree({ runId: stopped });
      expect(tree.runs.flatMap((run) => run.guards ?? []).map((g) => g.code)).toEqual(["budget_exceeded"]);
    } finally {
      await client.close();
    }
    const lines = readFileSync(recording, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // What replay needs of each request is recorded with it.
    expect(lines.filter((line) => line.type === "request")).toEqual([
      ...["a", "b", "c"].map((name, i) => ({
        v: 1,
        type: "request",
        runId: roots[i],
        method: "chat.send",
        sessionKey: room(name),
      })),
      {
        v: 1,
        type: "request",
        runId: roots[3],
        method: "agent",
        sessionKey: room("a"),
        budget: { runs: 40, seconds: 600 },
        traceparent: traces[0],
        deliver: { channel: "telegram", to: "42" },
      },
      {
        v: 1,
        type: "request",
        runId: roots[4],
        method: "chat.send",
        sessionKey: room("c"),
        budget: { runs: 1 },
        traceparent: traces[1],
      },
    ]);
  });

  it("replays as identical under the same config", async () => {
    const same = await replay(recording, chainConfig(4));
    expect(same.stdout).toMatch(/^replayed \d+ turns and \d+ deliveries: identical to /);
    expect(same.code).toBe(0);
  });

  it("replays a recording made before requests were recorded, pairing its roots by run id", async () => {
    const lines = readFileSync(recording, "utf8").trim().split("\n");
    const old = (name: string, kept: string[]) => {
      const file = join(dir, name);
      writeFileSync(file, `${kept.filter((line) => !line.includes('"type":"request"')).join("\n")}\n`);
      return file;
    };
    // The three greetings, each a chat.send with a random key: identical.
    const greetings = lines.slice(
      0,
      lines.findIndex((line) => line.includes(roots[3] as string)),
    );
    const same = await replay(old("greetings-old.jsonl", greetings), chainConfig(4));
    expect(same.stdout).toMatch(/^replayed 3 turns and 0 deliveries: identical to /);
    expect(same.code).toBe(0);
    // All of it: without the requests' budget and target the gateway decides otherwise, and says so.
    const all = await replay(old("chain-old.jsonl", lines), chainConfig(4));
    expect(all.code).toBe(1);
    expect(all.stdout).toMatch(/chat in agent:main:chat:group:c: sessions_send answered otherwise/);
    expect(all.stdout).toMatch(/^- .*"kind":"reply".*"channel":"telegram".*"status":"failed"/m);
    expect(all.stdout).not.toMatch(/replay-\d/);
  });

  it("differs with a readable diff under a lower hop limit", async () => {
    const changed = await replay(recording, chainConfig(3));
    expect(changed.code).toBe(1);
    // With three hops, #a's second send (the fourth message) is refused where the recording has it accepted.
    expect(changed.stdout).toMatch(
      /inter_session in agent:main:chat:group:a: sessions_send answered otherwise/,
    );
    expect(changed.stdout).toMatch(/status:\n\s+recorded "accepted"\n\s+now\s+"forbidden"/);
    expect(changed.stdout).toMatch(/never happened/);
    // The roots themselves were paired: no diff names them.
    for (const root of roots) expect(changed.stdout).not.toContain(root);
    expect(changed.stdout).not.toMatch(/replay-\d/);
  });

  it("reports a request the fresh gateway refuses, with its reason", async () => {
    // A chat.send that delivered to its session's own target: a fresh gateway's session has none.
    const file = join(dir, "refused.jsonl");
    const runId = randomUUID();
    writeFileSync(
      file,
      [
        {
          v: 1,
          type: "request",
          runId,
          method: "chat.send",
          sessionKey: room("d"),
          deliver: { channel: "x", to: "1" },
        },
        {
          v: 1,
          type: "turn",
          runId,
          agentId: "main",
          sessionKey: room("d"),
          kind: "chat",
          input: "hi",
          system: [],
        },
      ]
        .map((line) => `${JSON.stringify({ events: [], ...line })}\n`)
        .join(""),
    );
    const refused = await replay(file, chainConfig(4));
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(
      /^request #1 \(chat.send in agent:main:chat:group:d\) was refused: invalid_params \(deliver\): Session agent:main:chat:group:d has no delivery context/m,
    );
    expect(refused.stdout).toMatch(/#1 chat in agent:main:chat:group:d never happened: "hi"/);
  });
});
