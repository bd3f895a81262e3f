import {
  type AgentRunner,
  createGateway,
  type Gateway,
  type GatewayEvent,
  messageText,
  type SessionStore,
} from "@sessions/gateway";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createPostgresStore } from "./store.js";
import { eventually, freshSchema, sql } from "./testing/helpers.js";

const url = inject("postgresUrl");
const open: Gateway[] = [];
afterAll(async () => {
  await Promise.all(open.splice(0).map((gateway) => gateway.close({ drainMs: 100 })));
});

/** A runner that takes `ms` per turn and records how many turns of one session overlap (the outside world). */
function slowEcho(ms: number) {
  const active = new Map<string, number>();
  const seen = { maxOverlap: 0, turns: 0 };
  const runner: AgentRunner = {
    async run(request) {
      const now = (active.get(request.sessionKey) ?? 0) + 1;
      active.set(request.sessionKey, now);
      seen.maxOverlap = Math.max(seen.maxOverlap, now);
      seen.turns++;
      try {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { reply: `echo: ${messageText(request.input)}` };
      } finally {
        active.set(request.sessionKey, (active.get(request.sessionKey) ?? 1) - 1);
      }
    },
  };
  return { runner, seen };
}

const schemas = new WeakMap<Gateway, string>();
const schemaOf = async (gateway: Gateway) => `"${schemas.get(gateway)}"`;

/**
 * `n` gateways on one schema, as `n` processes would be (each with its own pool and LISTEN connection). Leases
 * outlast a stall of a busy machine: no test here is about one lapsing.
 */
async function cluster(
  n: number,
  runner: AgentRunner,
  /** What gateway `i` is given of its store (default: all of it). */
  storeOf: (store: SessionStore, i: number) => SessionStore = (store) => store,
): Promise<Gateway[] & { pick(i: number): Gateway }> {
  const schema = freshSchema("cluster");
  const gateways: Gateway[] = [];
  for (let i = 0; i < n; i++) {
    const store = await createPostgresStore({ connectionString: url, schema });
    const gateway = createGateway({
      store: storeOf(store, i),
      runner,
      cluster: { leaseTtlMs: 10_000, recoveryIntervalMs: 200 },
    });
    await gateway.ready;
    schemas.set(gateway, schema);
    open.push(gateway);
    gateways.push(gateway);
  }
  return Object.assign(gateways, { pick: (i: number) => gateways[i % n] as Gateway });
}

describe("several gateways on one Postgres", () => {
  it("answers agent.wait on one gateway for a run sent through another", async () => {
    const gateways = await cluster(2, slowEcho(50).runner);
    const [a, b] = [gateways.pick(0), gateways.pick(1)];
    const sent = await a.chat.send({ sessionKey: "main", message: "hello", idempotencyKey: "k-wait" });
    const waited = await b.agentWait({ runId: sent.runId, timeoutMs: 60_000 });
    expect(waited).toMatchObject({ status: "ok", reply: "echo: hello" });
    const history = await b.chat.history({ sessionKey: "main" });
    expect(history.messages.map((m) => messageText(m as never))).toEqual(["hello", "echo: hello"]);
  });

  it("ends a wait whose run's end was never announced (a gateway died between commit and NOTIFY)", async () => {
    // The second gateway's reads of runs still in progress, by run id.
    const readInProgress = new Map<string, number>();
    const gateways = await cluster(2, slowEcho(5).runner, (store, i) =>
      i === 0
        ? store
        : {
            ...store,
            async getRun(runId) {
              const read = await store.getRun(runId);
              if (read?.status === "running") readInProgress.set(runId, (readInProgress.get(runId) ?? 0) + 1);
              return read;
            },
          },
    );
    const sent = await gateways
      .pick(0)
      .chat.send({ sessionKey: "main", message: "x", idempotencyKey: "k-silent" });
    await gateways.pick(0).agentWait({ runId: sent.runId, timeoutMs: 60_000 });
    // Put the run back to running and end it again behind the stores' backs: no NOTIFY tells anyone.
    const run = await gateways.pick(0).store.getRun(sent.runId);
    const table = await schemaOf(gateways.pick(0));
    await sql(url, `UPDATE ${table}.runs SET status = 'running', data = $2 WHERE run_id = $1`, [
      sent.runId,
      JSON.stringify({ ...run, status: "running" }),
    ]);
    const waiting = gateways.pick(1).agentWait({ runId: sent.runId, timeoutMs: 60_000 });
    // The wait reads the run, registers, and reads it again (for an end between the two): both saw it running, so
    // only the recovery pass's re-read can end it once it is ended silently.
    await eventually(
      () => (readInProgress.get(sent.runId) ?? 0) >= 2,
      "the wait to read the run running twice",
    );
    await sql(url, `UPDATE ${table}.runs SET status = 'ok', data = $2 WHERE run_id = $1`, [
      sent.runId,
      JSON.stringify(run),
    ]);
    expect(await waiting).toMatchObject({ status: "ok", reply: "echo: x" });
  });

  it("runs one turn at a time per session across gateways", async () => {
    const echo = slowEcho(40);
    const gateways = await cluster(3, echo.runner);
    const sends = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        gateways.pick(i).chat.send({ sessionKey: "main", message: `m${i}`, idempotencyKey: `lane-${i}` }),
      ),
    );
    const results = await Promise.all(
      sends.map((s, i) => gateways.pick(i + 1).agentWait({ runId: s.runId, timeoutMs: 60_000 })),
    );
    expect(results.every((r) => r.status === "ok")).toBe(true);
    expect(echo.seen.turns).toBe(9);
    expect(echo.seen.maxOverlap).toBe(1);
    const history = await gateways.pick(0).chat.history({ sessionKey: "main", limit: 100 });
    expect(history.messages).toHaveLength(18);
  });

  it("makes one run of one idempotency key sent to every gateway at once", async () => {
    const echo = slowEcho(20);
    const gateways = await cluster(3, echo.runner);
    const sends = await Promise.all(
      gateways.flatMap((g) =>
        [1, 2].map(() => g.chat.send({ sessionKey: "main", message: "once", idempotencyKey: "same" })),
      ),
    );
    expect(new Set(sends.map((s) => s.runId)).size).toBe(1);
    await gateways.pick(2).agentWait({ runId: (sends[0] as { runId: string }).runId, timeoutMs: 60_000 });
    const history = await gateways.pick(1).chat.history({ sessionKey: "main" });
    expect(history.messages.map((m) => messageText(m as never))).toEqual(["once", "echo: once"]);
    expect(echo.seen.turns).toBe(1);
  });

  it("tells subscribers on every gateway when a run starts and ends elsewhere", async () => {
    const gateways = await cluster(2, slowEcho(30).runner);
    const [a, b] = [gateways.pick(0), gateways.pick(1)];
    const heard: GatewayEvent[] = [];
    b.subscribe((event) => heard.push(event));
    const sent = await a.chat.send({ sessionKey: "main", message: "far", idempotencyKey: "k-events" });
    await eventually(() =>
      heard.some((e) => e.type === "chat" && e.runId === sent.runId && e.state === "final"),
    );
    const mine = heard.filter((e) => (e.type === "chat" || e.type === "agent") && e.runId === sent.runId);
    expect(mine[0]).toMatchObject({ type: "agent", stream: "lifecycle", data: { phase: "start" } });
    expect(mine.at(-1)).toMatchObject({ type: "chat", state: "final", sessionKey: "agent:main:main" });
  });

  it("holds a bot connection on exactly one gateway and moves it when the holder lets go", async () => {
    const gateways = await cluster(3, slowEcho(1).runner);
    const running = new Set<number>();
    const held = gateways.map((g, i) =>
      g.holdConnection("telegram:bot", {
        start: () => void running.add(i),
        stop: () => void running.delete(i),
      }),
    );
    await eventually(() => running.size === 1);
    // A heartbeat on, the holder has renewed its lease while the others tried to take it: still one holder.
    const store = gateways.pick(0).store;
    const lease = held[0]?.lease as string;
    const taken = (await store.getLease(lease))?.expiresAt ?? 0;
    await eventually(
      async () => ((await store.getLease(lease))?.expiresAt ?? 0) > taken,
      "the holder renewed the connection lease",
    );
    expect(running.size).toBe(1);
    const holder = held.findIndex((h) => h.held);
    expect(held.filter((h) => h.held)).toHaveLength(1);
    expect([...running]).toEqual([holder]);
    await held[holder]?.release();
    expect(running.has(holder)).toBe(false);
    await eventually(() => running.size === 1);
    expect(held.filter((h) => h.held)).toHaveLength(1);
  });
});
