import type { ChildProcess } from "node:child_process";
import { SessionsError } from "@sessions/core";
import { messageText, type SessionStore } from "@sessions/gateway";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { createPostgresStore } from "./store.js";
import { startFakePlatform } from "./testing/fake-platform.js";
import { freshSchema } from "./testing/helpers.js";
import { type LocalPostgres, startLocalPostgres } from "./testing/local-postgres.js";
import { startGatewayProcess } from "./testing/spawn-gateway.js";

/**
 * Postgres stopped and started again (a fast shutdown, then a kill) while three gateway processes take traffic.
 * A Postgres of this file's own: restarting the one the other test files share would fail them.
 */
const children = new Set<ChildProcess>();
const cleanup: (() => Promise<unknown>)[] = [];
let server: LocalPostgres;
let url: string;
beforeAll(async () => {
  // Commits durable as in production: a killed server must not lose what it acknowledged (the tests' shared
  // server trades that for speed).
  server = await startLocalPostgres({ durable: true });
  url = await server.createDatabase("restart");
});
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
  await server?.stop();
});

const RUNS = 90;
const SESSIONS = 6;
const text = (i: number) => (i % 5 === 0 ? `slow:400 m${i}` : `m${i}`);

describe("the database restarting under load", () => {
  // Retried once: in two full-suite runs of 2026-11-25 on a loaded machine, a run was left `running` (once `queued`)
  // after the restart. A likely cause is fixed: a start committed just before the kill whose answer was lost, which
  // the retried request found and nobody ran (runs/lost-start-answer.test.ts in the gateway). Not seen since.
  it("every gateway reconnects, waits end, outage requests get unavailable, acknowledged writes land exactly once", {
    retry: 1,
  }, async () => {
    // A retry starts clean: the first attempt's gateways gone, a schema of its own.
    for (const child of children) child.kill("SIGKILL");
    children.clear();
    const schema = freshSchema("restart");
    const platform = await startFakePlatform();
    cleanup.push(platform.close);
    // Leases outlast the outage: a lease that lapses while the database is down is taken as its gateway gone
    // (docs/scale-out.md), and on a busy machine a durable Postgres takes seconds to recover from the kill.
    const gateways = await Promise.all(
      ["g1", "g2", "g3"].map((name) =>
        startGatewayProcess(children, { url, schema, name, platformUrl: platform.url, leaseTtlMs: 15_000 }),
      ),
    );
    onTestFailed(() => {
      for (const g of gateways) process.stderr.write(`--- ${g.name}\n${g.log.join("")}\n`);
    });
    const clients: GatewayClient[] = [];
    for (const g of gateways) {
      // A request outlasts an outage on a busy machine: a client-side timeout is no `unavailable` (it fails
      // the test).
      const client = createGatewayClient({ url: g.url, reconnect: false, requestTimeoutMs: 120_000 });
      await client.ready();
      clients.push(client);
      cleanup.push(() => client.close());
    }

    // What a careful client does: a request the store could not take is retried with the same key, after the
    // hint it came with. Anything but `unavailable` with a hint fails the test.
    const refused: SessionsError[] = [];
    const untilAnswered = async <T>(call: () => Promise<T>): Promise<T> => {
      for (;;) {
        try {
          return await call();
        } catch (error) {
          if (!SessionsError.isInstance(error) || error.code !== "unavailable") throw error;
          if (typeof error.retryAfterMs !== "number")
            throw new Error(`refused without a retry hint: ${error.message}`, { cause: error });
          refused.push(error);
          await new Promise((resolve) => setTimeout(resolve, error.retryAfterMs));
        }
      }
    };
    const acked = new Map<number, string>();
    const send = (i: number, via: GatewayClient) =>
      untilAnswered(
        () =>
          via.request("agent", {
            message: text(i),
            idempotencyKey: `k${i}`,
            sessionKey: `s${i % SESSIONS}`,
            deliver: true,
            channel: "chat",
            to: `room:${i % SESSIONS}`,
          }) as Promise<{ runId: string }>,
      ).then(({ runId }) => acked.set(i, runId));
    // Waits of runs accepted on another gateway: they end (with the run's outcome), whatever happened meanwhile.
    const waitEnd = async (runId: string, via: GatewayClient) => {
      // A bound far above the time a run takes here, so that a run that never ends fails with what it is.
      for (let round = 0; round < 6; round++) {
        const result = (await untilAnswered(() =>
          via.request("agent.wait", { runId, timeoutMs: 20_000 }),
        )) as { status: string; error?: unknown };
        // A run that did not end ok names how it ended (the error is the first thing a failure needs).
        if (result.status === "ok") return "ok";
        if (result.status !== "timeout") return `${result.status}: ${JSON.stringify(result.error)}`;
      }
      const store = await createPostgresStore({ connectionString: url, schema });
      const stuck = await store.getRun(runId).finally(() => store.close());
      throw new Error(`run ${runId} never ended: ${JSON.stringify(stuck)}`);
    };

    // Traffic from every gateway all along; the database restarts twice under it.
    let next = 0;
    const traffic = Promise.all(
      clients.map(async (client, c) => {
        for (let i = next++; i < RUNS; i = next++) {
          await send(i, client);
          await new Promise((resolve) => setTimeout(resolve, 10));
          if (i % 7 === 0) {
            const status = await waitEnd(
              acked.get(i) as string,
              clients[(c + 1) % clients.length] as GatewayClient,
            );
            expect(status).toBe("ok");
          }
        }
      }),
    );
    await eventually(() => acked.size >= RUNS / 3, "a third of the runs acknowledged");
    await server.restart("fast", { downMs: 1_000 });
    await eventually(() => acked.size >= (RUNS * 2) / 3, "two thirds of the runs acknowledged");
    await server.restart("kill", { downMs: 1_000 });
    await traffic;
    expect(acked.size).toBe(RUNS);
    expect(refused.length, "requests during the outages were refused as unavailable").toBeGreaterThan(0);

    // Every acknowledged run ended ok, whoever waits for it and wherever it ran.
    for (const [i, runId] of acked) {
      expect({ i, status: await waitEnd(runId, clients[i % clients.length] as GatewayClient) }).toEqual({
        i,
        status: "ok",
      });
    }
    // Every gateway took traffic again by itself: a run on each, waited for on another (the change feed).
    for (const [c, client] of clients.entries()) {
      const i = RUNS + c;
      await send(i, client);
      expect(await waitEnd(acked.get(i) as string, clients[(c + 1) % clients.length] as GatewayClient)).toBe(
        "ok",
      );
    }

    // Exactly once: one run per key, one input per run, one reply sent per run (the platform saw every attempt).
    const store: SessionStore = await createPostgresStore({ connectionString: url, schema });
    cleanup.push(() => store.close());
    for (const [i, runId] of acked) {
      expect((await store.findRunByIdempotencyKey(`k${i}`))?.runId).toBe(runId);
    }
    for (let s = 0; s < SESSIONS; s++) {
      const inputs = (await store.readMessages(`agent:main:s${s}`, { limit: 1_000 }))
        .filter((message) => message.role === "user")
        .map((message) => messageText(message));
      const expected = [...acked.keys()].filter((i) => i % SESSIONS === s).map(text);
      expect(inputs.sort()).toEqual(expected.sort());
    }
    await eventually(
      () =>
        expect(new Set(platform.posts.map((post) => post.key))).toEqual(
          new Set([...acked.values()].map((id) => `reply:${id}`)),
        ),
      "every reply sent",
    );
    const perKey = new Map<string, number>();
    for (const post of platform.posts) perKey.set(post.key, (perKey.get(post.key) ?? 0) + 1);
    expect([...perKey].filter(([, n]) => n !== 1)).toEqual([]);
    for (const runId of acked.values()) {
      await eventually(
        async () => (await store.listDeliveries({ runId }))[0]?.status === "delivered",
        `the reply of ${runId} recorded as delivered`,
      );
    }
  });
});
