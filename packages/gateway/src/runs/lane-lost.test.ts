import { eventually } from "@sessions/testing/eventually";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGateway } from "../create-gateway.js";
import type { Gateway } from "../gateway.js";
import type { AgentRunner, RunnerTool } from "../runner/types.js";
import { createMemoryStore } from "../store/memory.js";
import type { SessionStore } from "../store/types.js";
import { createStreamingChannel } from "../test-kit.js";

const cluster = { leaseTtlMs: 600, recoveryIntervalMs: 100 };

/** A gateway's link to the shared store: while cut, its calls wait (a partition holds bytes) until it heals. */
function linkTo(store: SessionStore) {
  let healed: Promise<void> | undefined;
  let heal = () => {};
  const linked = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      // The store's calls that never reach the database.
      if (["watch", "transcriptPath", "publish", "subscribe"].includes(String(key)))
        return value.bind(target);
      return async (...args: unknown[]) => {
        while (healed !== undefined) await healed;
        return value.apply(target, args);
      };
    },
  });
  return {
    store: linked,
    cut() {
      healed = new Promise<void>((resolve) => {
        heal = () => {
          healed = undefined;
          resolve();
        };
      });
    },
    heal: () => heal(),
  };
}

interface Execution {
  gateway: string;
  runId: string;
  sessionKey: string;
  text: string;
  repeat: boolean;
  start: number;
  end?: number;
  outcome?: "ok" | "aborted";
}

/**
 * What each gateway's runner really did, apart from the gateway's records: a message containing "long" runs until
 * its run is stopped (its first attempt) or 50 ms (a repeat); any other, 50 ms.
 */
function witnessRunner(gateway: string, log: Execution[]): AgentRunner {
  return {
    async run(request) {
      const text = String(request.input.content);
      const execution: Execution = {
        gateway,
        runId: request.runId,
        sessionKey: request.sessionKey,
        text,
        repeat: request.repeat === true,
        start: performance.now(),
      };
      log.push(execution);
      const stopped = new Promise<void>((resolve) =>
        request.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
      const ms = text.includes("long") && !execution.repeat ? 60_000 : 50;
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, ms))]);
      execution.end = performance.now();
      execution.outcome = request.signal.aborted ? "aborted" : "ok";
      if (request.signal.aborted) throw request.signal.reason;
      return { reply: `done: ${text}${execution.repeat ? " (again)" : ""}` };
    },
  };
}

/** Executions of one session that overlap in time (there must be none). */
function overlaps(log: readonly Execution[]): [Execution, Execution][] {
  const found: [Execution, Execution][] = [];
  for (const [i, a] of log.entries()) {
    for (const b of log.slice(i + 1)) {
      if (a.sessionKey !== b.sessionKey) continue;
      const aEnd = a.end ?? Number.POSITIVE_INFINITY;
      const bEnd = b.end ?? Number.POSITIVE_INFINITY;
      if (a.start < bEnd && b.start < aEnd) found.push([a, b]);
    }
  }
  return found;
}

const gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close({ drainMs: 0 })));
});

function start(
  name: string,
  store: SessionStore,
  log: Execution[],
  options: { runner?: AgentRunner; recoveryIntervalMs?: number } = {},
): Gateway {
  const gateway = createGateway({
    store,
    runner: options.runner ?? witnessRunner(name, log),
    cluster: { ...cluster, recoveryIntervalMs: options.recoveryIntervalMs ?? cluster.recoveryIntervalMs },
  });
  gateways.push(gateway);
  return gateway;
}

/** Gateway "b" on a memory store, where gateway "a" was cut off: a's liveness lease lapsed a minute ago. */
async function besideCutOffGateway(log: Execution[]) {
  const store = createMemoryStore();
  const b = start("b", store, log);
  await b.ready;
  const now = Date.now();
  await store.acquireLease({ name: "gateway:a", owner: "a", ttlMs: 1000, now: now - 61_000 });
  return { store, b, now };
}

describe("a run whose gateway loses the store past its lane's lease", () => {
  it("stops before its lease lapses and runs again on the same gateway once the store is back (every gateway cut off)", async () => {
    const link = linkTo(createMemoryStore());
    const log: Execution[] = [];
    const a = start("a", link.store, log);
    await a.ready;
    const { runId } = await a.agent({ sessionKey: "s", message: "a long one", idempotencyKey: "k1" });
    await eventually(() => expect(log).toHaveLength(1));
    link.cut();
    // Past the lease: the run stops (it could not renew its lane), and nothing is written meanwhile.
    await eventually(() => expect(log[0]?.outcome).toBe("aborted"));
    await new Promise((resolve) => setTimeout(resolve, cluster.leaseTtlMs));
    link.heal();
    const waited = await a.agentWait({ runId, timeoutMs: 60_000 });
    expect(waited).toMatchObject({ status: "ok", reply: "done: a long one (again)" });
    expect(log.map((e) => [e.runId, e.repeat, e.outcome])).toEqual([
      [runId, false, "aborted"],
      [runId, true, "ok"],
    ]);
    const history = await a.chat.history({ sessionKey: "s" });
    expect(history.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("run again on the same gateway, its reply edits on the message it had streamed into (one message)", async () => {
    const link = linkTo(createMemoryStore());
    const channel = createStreamingChannel({ intervalMs: 0 });
    const attempts: boolean[] = [];
    const gateway = createGateway({
      store: link.store,
      adapters: [channel],
      config: { channels: { chat: { streaming: "partial" } } },
      cluster,
      runner: {
        async run(request) {
          attempts.push(request.repeat === true);
          request.emit({ type: "text-delta", text: "Half of the reply " });
          if (request.repeat === true) return { reply: "The whole reply, written again." };
          await new Promise((resolve) => request.signal.addEventListener("abort", resolve, { once: true }));
          throw request.signal.reason;
        },
      },
    });
    gateways.push(gateway);
    await gateway.ready;
    const { runId } = await gateway.agent({
      sessionKey: "s",
      message: "write",
      idempotencyKey: "k-stream",
      deliver: true,
      channel: "chat",
      to: "room:1",
    });
    // Its message is up and recorded on the run before the store goes away.
    await eventually(async () =>
      expect((await link.store.getRun(runId))?.stream?.messageIds).toHaveLength(1),
    );
    link.cut();
    await eventually(() => expect(attempts).toEqual([false]));
    await new Promise((resolve) => setTimeout(resolve, cluster.leaseTtlMs));
    link.heal();
    expect(await gateway.agentWait({ runId, timeoutMs: 60_000 })).toMatchObject({ status: "ok" });
    await eventually(() =>
      expect(channel.shown("room:1").map((m) => m.text)).toEqual(["The whole reply, written again."]),
    );
    expect(attempts).toEqual([false, true]);
    expect(channel.requests.filter((r) => r.op === "post")).toHaveLength(1);
  });

  it("never overlaps another gateway's runs of its session when it alone is cut off", async () => {
    const shared = createMemoryStore();
    const link = linkTo(shared);
    const log: Execution[] = [];
    const a = start("a", link.store, log);
    const b = start("b", shared, log);
    await Promise.all([a.ready, b.ready]);
    const handedOver: string[] = [];
    a.lifecycle.subscribe({
      ended(run, followUps) {
        if (!followUps) handedOver.push(run.runId);
      },
    });
    // b has reached the store for longer than a lease: it may judge a's leases.
    await new Promise((resolve) => setTimeout(resolve, 2 * cluster.leaseTtlMs));
    const first = await a.agent({ sessionKey: "s", message: "a long one", idempotencyKey: "k1" });
    await eventually(() => expect(log).toHaveLength(1));
    link.cut();
    const later = [];
    for (const n of [2, 3, 4])
      later.push(await b.agent({ sessionKey: "s", message: `m${n}`, idempotencyKey: `k${n}` }));
    for (const { runId } of later)
      expect(await b.agentWait({ runId, timeoutMs: 60_000 })).toMatchObject({ status: "ok" });
    link.heal();
    // a's run was stopped before b ran anything of its session; b took it over as its gateway's lease lapsed and ran
    // it again, told it may be a repeat, among the messages sent to it (in whichever order they got the lane).
    expect(overlaps(log)).toEqual([]);
    const ended = await b.agentWait({ runId: first.runId, timeoutMs: 60_000 });
    expect(ended.status).toBe("ok");
    const onB = log.filter((e) => e.gateway === "b");
    expect(onB.map((e) => e.text).sort()).toEqual(["a long one", "m2", "m3", "m4"]);
    expect(onB.filter((e) => e.repeat).map((e) => e.runId)).toEqual([first.runId]);
    expect((await shared.getRun(first.runId))?.repeats).toBe(1);
    // Once healed, a does not run it again: its fenced start finds it taken over, and a hands it over (ended
    // elsewhere, with no follow-ups of its own).
    await eventually(() => expect(handedOver).toContain(first.runId));
    expect(log.filter((e) => e.runId === first.runId).map((e) => e.gateway)).toEqual(["a", "b"]);
    expect(overlaps(log)).toEqual([]);
  });

  it("leaves alone a run its gateway started after its own lease lapsed (it is back and has not renewed yet)", async () => {
    // It ran one run before its lease lapsed, and one since it is back.
    const { store, now } = await besideCutOffGateway([]);
    const run = (runId: string, createdAt: number) => ({
      runId,
      sessionKey: `agent:main:${runId}`,
      agentId: "main",
      kind: "agent" as const,
      status: "running" as const,
      createdAt,
      startedAt: createdAt,
      owner: "a",
    });
    await store.putRun(run("before", now - 120_000));
    await store.putRun(run("since", now));
    // b's recovery ends the run a left behind, once b may judge (a full lease of contact), and only that one.
    await eventually(async () => expect((await store.getRun("before"))?.status).toBe("error"));
    expect((await store.getRun("since"))?.status).toBe("running");
  });

  it("runs again a run its cut-off gateway left, up to three times; a fourth takeover ends it as an error", async () => {
    const log: Execution[] = [];
    // Two runs under way on a when it was cut off.
    const { store, now } = await besideCutOffGateway(log);
    const left = async (runId: string, repeats: number | undefined) => {
      const sessionKey = `agent:main:${runId}`;
      const input = await store.appendMessage(sessionKey, {
        role: "user",
        content: `left ${runId}`,
        ts: now,
      });
      await store.putRun({
        runId,
        sessionKey,
        agentId: "main",
        kind: "agent",
        status: "running",
        createdAt: now - 120_000,
        startedAt: now - 120_000,
        owner: "a",
        inputSeq: input.seq,
        rerun: { tools: null, system: ["be brief"] },
        ...(repeats === undefined ? {} : { repeats }),
      });
    };
    await left("twice-before", 2);
    await left("thrice-before", 3);
    await eventually(async () => expect((await store.getRun("twice-before"))?.status).toBe("ok"));
    expect(await store.getRun("twice-before")).toMatchObject({
      repeats: 3,
      reply: "done: left twice-before (again)",
    });
    expect((await store.getRun("twice-before"))?.owner).not.toBe("a");
    expect(log.map((e) => [e.runId, e.gateway, e.repeat])).toEqual([["twice-before", "b", true]]);
    await eventually(async () => expect((await store.getRun("thrice-before"))?.status).toBe("error"));
    expect((await store.getRun("thrice-before"))?.error).toMatch(/had run again 3 times already/);
  });

  it("refuses an end held up past the lane's lease once another gateway has the lane: the run runs again after", async () => {
    const shared = createMemoryStore();
    const link = linkTo(shared);
    const ran: string[] = [];
    const gates = new Map<string, () => void>();
    const gate = (name: string) =>
      new Promise<void>((resolve) => {
        gates.set(name, resolve);
      });
    // Each run waits for the test to let it answer (a repeat answers at once).
    const runner = (gateway: string): AgentRunner => ({
      async run(request) {
        const text = String(request.input.content);
        ran.push(`${gateway}:${text}${request.repeat ? " (again)" : ""}`);
        if (!request.repeat) await gate(text);
        return { reply: `${text} answered${request.repeat ? " again" : ""}` };
      },
    });
    const a = start("a", link.store, [], { runner: runner("a") });
    // b never recovers in this test: what fences a's end is the lane, not a takeover of the run.
    const b = start("b", shared, [], { runner: runner("b"), recoveryIntervalMs: 600_000 });
    await Promise.all([a.ready, b.ready]);
    await new Promise((resolve) => setTimeout(resolve, 2 * cluster.leaseTtlMs));
    const first = await a.agent({ sessionKey: "s", message: "r1", idempotencyKey: "k1" });
    await eventually(() => expect(ran).toEqual(["a:r1"]));
    // a's runner answers just as a is cut off: its end is held up in the partition.
    link.cut();
    gates.get("r1")?.();
    // b takes the lane once a's lease lapsed, and runs the next message of the session.
    const second = await b.agent({ sessionKey: "s", message: "m2", idempotencyKey: "k2" });
    await eventually(() => expect(ran).toEqual(["a:r1", "b:m2"]));
    // The partition heals while b runs m2: a's end lands, and is refused (b holds the lane).
    link.heal();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await shared.getRun(first.runId))?.status).toBe("running");
    expect((await shared.readMessages("agent:main:s", { limit: 10 })).map((m) => m.content)).toEqual([
      "r1",
      "m2",
    ]);
    gates.get("m2")?.();
    expect(await b.agentWait({ runId: second.runId, timeoutMs: 60_000 })).toMatchObject({ status: "ok" });
    // a runs it again once the lane is back, told it may be a repeat; its first answer is nowhere.
    expect(await a.agentWait({ runId: first.runId, timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
      reply: "r1 answered again",
    });
    expect(ran).toEqual(["a:r1", "b:m2", "a:r1 (again)"]);
    expect((await shared.readMessages("agent:main:s", { limit: 10 })).map((m) => m.content)).toEqual([
      "r1",
      "m2",
      "m2 answered",
      "r1 answered again",
    ]);
  });

  it("refuses a tool call held up past the lane's lease once another gateway has the lane: the tool does not run", async () => {
    const shared = createMemoryStore();
    const link = linkTo(shared);
    const ran: string[] = [];
    // The outside world the tool acts on: what it did, and as which attempt.
    const posted: string[] = [];
    const post: RunnerTool = {
      name: "post",
      description: "posts somewhere outside",
      parameters: z.object({ text: z.string() }),
      jsonSchema: { type: "object", properties: { text: { type: "string" } } },
      async execute(params) {
        posted.push((params as { text: string }).text);
        return { ok: true };
      },
    };
    let answer = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    // a's first attempt calls the tool once the test lets it, its repeat at once; b just answers.
    const runner = (gateway: string): AgentRunner => ({
      async run(request) {
        const text = String(request.input.content);
        const again = request.repeat === true ? " (again)" : "";
        ran.push(`${gateway}:${text}${again}`);
        if (gateway === "b") return { reply: `${text} answered` };
        if (!request.repeat) await answered;
        const tool = request.tools.find((t) => t.name === "post");
        await tool?.execute({ text: `${text}${again}` });
        return { reply: `${text} posted${again}` };
      },
    });
    const a = createGateway({ store: link.store, runner: runner("a"), tools: [post], cluster });
    const b = createGateway({
      store: shared,
      runner: runner("b"),
      cluster: { ...cluster, recoveryIntervalMs: 600_000 },
    });
    gateways.push(a, b);
    await Promise.all([a.ready, b.ready]);
    await new Promise((resolve) => setTimeout(resolve, 2 * cluster.leaseTtlMs));
    const first = await a.agent({ sessionKey: "s", message: "r1", idempotencyKey: "k1" });
    await eventually(() => expect(ran).toEqual(["a:r1"]));
    // a's runner calls the tool just as a is cut off: the tool call's transcript line is held up in the partition.
    link.cut();
    answer();
    const second = await b.agent({ sessionKey: "s", message: "m2", idempotencyKey: "k2" });
    expect(await b.agentWait({ runId: second.runId, timeoutMs: 60_000 })).toMatchObject({ status: "ok" });
    // The partition heals after b took the lane: a's line is refused, and the tool never acts.
    link.heal();
    expect(await a.agentWait({ runId: first.runId, timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
      reply: "r1 posted (again)",
    });
    expect(posted).toEqual(["r1 (again)"]);
    expect(ran).toEqual(["a:r1", "b:m2", "a:r1 (again)"]);
    const lines = await shared.readMessages("agent:main:s", { limit: 10 });
    expect(lines.map((m) => [m.role, m.runId ?? null])).toEqual([
      ["user", first.runId],
      ["user", second.runId],
      ["assistant", second.runId],
      ["assistant", first.runId],
      ["toolResult", first.runId],
      ["assistant", first.runId],
    ]);
  });
});
