import { SessionsError } from "@sessions/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import { BUSY_NOTICE } from "../inbound/receive.js";
import { createScriptedRunner, type ScriptedAgent } from "../runner/scripted.js";
import type { RunRecord, SessionStore } from "../store/types.js";
import {
  cleanupDirs,
  createFakeChannel,
  eventually,
  type Harness,
  harness,
  openStore,
  STORE_KINDS,
} from "../test-kit.js";
import { messageText } from "../transcript.js";

afterAll(cleanupDirs);

const KEY = "agent:main:main";

/** What one run of the agent saw: its id, its input's text, the users' texts of its history, what it steered. */
interface Turn {
  runId: string;
  text: string;
  users: string[];
  steered: string[][];
}

/** An agent that holds its run of "first" until `release()`, and notes what every run saw. */
function heldAgent(steerCalls = 1) {
  const turns: Turn[] = [];
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const agent: ScriptedAgent = async (turn) => {
    const seen: Turn = {
      runId: turn.runId,
      text: turn.text,
      users: turn.messages.filter((m) => m.role === "user").map(messageText),
      steered: [],
    };
    turns.push(seen);
    if (turn.text === "first") {
      await held;
      for (let i = 0; i < steerCalls; i++) seen.steered.push((await turn.takeSteering()).map(messageText));
    }
    return `reply to ${turn.text}`;
  };
  return { agent, turns, release: () => release() };
}

/** Sam's direct message to the main agent (its main session), from the chat channel. */
const fromSam = (text: string) => ({
  channel: "chat",
  chatType: "direct" as const,
  peerId: "sam",
  senderId: "sam",
  to: "sam",
  text,
  agentId: "main",
});

describe.each(STORE_KINDS)("queue modes on the %s store", (kind) => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const send = async (message: string) =>
    (await (h as Harness).gateway.chat.send({ sessionKey: KEY, message, idempotencyKey: `k-${message}` }))
      .runId;
  const wait = (runId: string) => (h as Harness).gateway.agentWait({ runId, timeoutMs: 60_000 });
  const runOf = async (runId: string) => (await (h as Harness).store.getRun(runId)) as RunRecord;
  const replies = async () =>
    (await (h as Harness).store.readMessages(KEY, { limit: 100 }))
      .filter((m) => m.role === "assistant")
      .map(messageText);

  /** Starts "first" (held running), sets the mode, and records the others queued behind it. */
  async function busyWith(mode: string | undefined, ...others: string[]) {
    const first = await send("first");
    await eventually(async () => expect((await runOf(first)).status).toBe("running"), "first running");
    if (mode !== undefined) await h?.gateway.sessions.patch({ key: KEY, queueMode: mode as "collect" });
    const ids: string[] = [];
    for (const text of others) ids.push(await send(text));
    for (const id of ids) expect((await runOf(id)).status).toBe("queued");
    return { first, ids };
  }

  it("followup (the default) runs each message afterwards, one reply each", async () => {
    const agent = heldAgent();
    h = await harness(kind, { main: agent.agent });
    const { first, ids } = await busyWith(undefined, "a", "b", "c");
    agent.release();
    for (const id of [first, ...ids]) expect((await wait(id)).status).toBe("ok");
    expect(agent.turns.map((t) => t.text)).toEqual(["first", "a", "b", "c"]);
    expect(await replies()).toEqual(["reply to first", "reply to a", "reply to b", "reply to c"]);
  });

  it("collect answers every message that waited with one run and one reply that saw them all", async () => {
    const agent = heldAgent();
    h = await harness(kind, { main: agent.agent });
    const ends: { runId: string; data: Record<string, unknown> }[] = [];
    h.gateway.subscribe((event) => {
      if (event.type !== "agent" || event.stream !== "lifecycle") return;
      const data = event.data as Record<string, unknown>;
      if (data.phase === "end") ends.push({ runId: event.runId, data });
    });
    const { first, ids } = await busyWith("collect", "a", "b", "c");
    const [a, b, c] = ids as [string, string, string];
    agent.release();
    expect((await wait(first)).status).toBe("ok");
    const answered = await wait(a);
    expect(answered).toMatchObject({ status: "ok", reply: "reply to c" });
    // b and c never ran: a took their messages, and its reply answers them.
    for (const id of [b, c]) {
      const result = await wait(id);
      expect(result).toMatchObject({ status: "ok", mergedInto: a });
      expect(result.reply).toBeUndefined();
    }
    expect(agent.turns.map((t) => [t.runId, t.text])).toEqual([
      [first, "first"],
      [a, "c"],
    ]);
    expect(agent.turns[1]?.users).toEqual(["first", "a", "b", "c"]);
    expect(await replies()).toEqual(["reply to first", "reply to c"]);
    const tree = await h.gateway.runs.tree({ runId: b });
    expect(tree.runs.find((r) => r.runId === b)).toMatchObject({ status: "ok", mergedInto: a });
    // A client watching b's events learns which run answers it.
    await eventually(async () => expect(ends.find((e) => e.runId === c)?.data.mergedInto).toBe(a));
  });

  it("collect is set per agent in config, and leaves sends between sessions alone", async () => {
    const agent = heldAgent();
    h = await harness(
      kind,
      { main: agent.agent },
      { config: { agents: { list: [{ id: "main", queueMode: "collect" }] } } },
    );
    const first = await send("first");
    await eventually(async () => expect((await runOf(first)).status).toBe("running"), "first running");
    const a = await send("a");
    const fromPeer = await h.gateway.agent({
      sessionKey: KEY,
      message: "from a peer",
      idempotencyKey: "peer-1",
      inputProvenance: { kind: "inter_session", sourceSessionKey: "agent:main:other" },
    });
    const b = await send("b");
    agent.release();
    for (const id of [first, a, fromPeer.runId]) expect((await wait(id)).status).toBe("ok");
    expect((await wait(b)).mergedInto).toBe(a);
    expect((await runOf(fromPeer.runId)).mergedInto).toBeUndefined();
    expect(agent.turns.map((t) => t.text)).toEqual(["first", "b", "from a peer"]);
  });

  it("steer hands the waiting messages to the running turn at its next boundary; they do not run again", async () => {
    const agent = heldAgent(2);
    const clock = createManualClock();
    const runner = createScriptedRunner({ agents: { main: agent.agent }, clock, steering: true });
    h = await harness(kind, { main: agent.agent }, { runner }, { clock, channel: createFakeChannel() });
    const { first, ids } = await busyWith("steer", "a", "b");
    agent.release();
    expect((await wait(first)).status).toBe("ok");
    for (const id of ids) expect(await wait(id)).toMatchObject({ status: "ok", mergedInto: first });
    expect(agent.turns).toHaveLength(1);
    expect(agent.turns[0]?.steered).toEqual([["a", "b"], []]);
    expect(await replies()).toEqual(["reply to first"]);
  });

  it("steer sends the reply where the newest steered message that wants one came from", async () => {
    const agent = heldAgent(1);
    const clock = createManualClock();
    const runner = createScriptedRunner({ agents: { main: agent.agent }, clock, steering: true });
    h = await harness(
      kind,
      { main: agent.agent },
      { runner, config: { agents: { defaults: { queueMode: "steer" } } } },
      { clock, channel: createFakeChannel() },
    );
    // The running turn came from the web chat (no reply target); the message steered into it, from a chat.
    const first = await send("first");
    await eventually(async () => expect((await runOf(first)).status).toBe("running"), "first running");
    const inbound = await h.gateway.receive(fromSam("also this"));
    expect((await runOf(inbound.runId as string)).status).toBe("queued");
    agent.release();
    expect(await wait(inbound.runId as string)).toMatchObject({ status: "ok", mergedInto: first });
    await eventually(() =>
      expect(h?.channel.sent.map((m) => [m.target.to, m.message.text])).toEqual([["sam", "reply to first"]]),
    );
    expect(agent.turns[0]?.steered).toEqual([["also this"]]);
  });

  it("a run that took waiting messages and then fails ends them with its failure (collect and steer)", async () => {
    for (const mode of ["collect", "steer"] as const) {
      const agent = heldAgent(1);
      const failing: ScriptedAgent = async (turn) => {
        await agent.agent(turn);
        // collect: the run that took b and c; steer: the held run that took a and b at its boundary.
        if (mode === "collect" ? turn.text === "c" : turn.text === "first")
          throw new Error("model unavailable");
        return `reply to ${turn.text}`;
      };
      const clock = createManualClock();
      const runner = createScriptedRunner({ agents: { main: failing }, clock, steering: true });
      h = await harness(kind, { main: failing }, { runner }, { clock, channel: createFakeChannel() });
      const { first, ids } = await busyWith(mode, "a", "b", "c");
      const [a, b, c] = ids as [string, string, string];
      agent.release();
      const taker = mode === "collect" ? a : first;
      expect(await wait(taker)).toMatchObject({ status: "error", error: "model unavailable" });
      const taken = mode === "collect" ? [b, c] : [a, b, c];
      for (const id of taken) {
        // Read once the taker's end is written: the merged run's outcome is its taker's.
        await eventually(async () => expect((await runOf(id)).status).toBe("error"));
        expect(await wait(id)).toMatchObject({
          status: "error",
          mergedInto: taker,
          error: `the run that took this message (${taker}) ended error: model unavailable`,
        });
      }
      await h.close();
      h = undefined;
    }
  });

  it("steer falls back to followup with a runner that cannot steer", async () => {
    const agent = heldAgent();
    h = await harness(kind, { main: agent.agent });
    const { first, ids } = await busyWith("steer", "a", "b");
    agent.release();
    for (const id of [first, ...ids]) expect((await wait(id)).status).toBe("ok");
    expect(agent.turns.map((t) => t.text)).toEqual(["first", "a", "b"]);
    expect(agent.turns[0]?.steered).toEqual([[]]);
  });

  it("steer-backlog steers the messages and still runs them afterwards, handing each over once", async () => {
    const agent = heldAgent(2);
    const clock = createManualClock();
    const runner = createScriptedRunner({ agents: { main: agent.agent }, clock, steering: true });
    h = await harness(kind, { main: agent.agent }, { runner }, { clock, channel: createFakeChannel() });
    const { first, ids } = await busyWith("steer-backlog", "a", "b");
    agent.release();
    for (const id of [first, ...ids]) {
      const result = await wait(id);
      expect(result.status).toBe("ok");
      expect(result.mergedInto).toBeUndefined();
    }
    expect(agent.turns[0]?.steered).toEqual([["a", "b"], []]);
    expect(agent.turns.map((t) => t.text)).toEqual(["first", "a", "b"]);
  });

  it("interrupt aborts the running run, and the next run starts over with every waiting message", async () => {
    const agent = heldAgent();
    h = await harness(kind, { main: agent.agent });
    const { first, ids } = await busyWith(undefined, "a", "b");
    await h.gateway.sessions.patch({ key: KEY, queueMode: "interrupt" });
    const c = await send("c");
    const [a, b] = ids as [string, string];
    await wait(first);
    expect((await runOf(first)).status).toBe("aborted");
    expect(await wait(a)).toMatchObject({ status: "ok", reply: "reply to c" });
    for (const id of [b, c]) expect((await wait(id)).mergedInto).toBe(a);
    expect(agent.turns.map((t) => t.text)).toEqual(["first", "c"]);
    expect(agent.turns[1]?.users).toEqual(["first", "a", "b", "c"]);
    agent.release();
  });

  it("interrupt never aborts the run that took the message, however late the message's interrupt comes", async () => {
    const agent = heldAgent();
    let holdC: () => void = () => {};
    const cHeld = new Promise<void>((resolve) => {
      holdC = resolve;
    });
    const inner: ScriptedAgent = async (turn) => {
      if (turn.text === "c") await cHeld;
      return agent.agent(turn);
    };
    // The interrupts' reads of the running runs wait until the test lets each one through, in order. An interrupt
    // acts on its read at once (it aborts, or not, with no further wait): `acted` resolves a turn of the event loop
    // after the read has answered it.
    const base = openStore(kind).store;
    const blocked: { go: () => void; acted: Promise<void> }[] = [];
    let gated = false;
    const store: SessionStore = new Proxy(base, {
      get(target, prop, receiver) {
        if (prop === "listRunsByStatus") {
          return async (statuses: readonly string[]) => {
            if (!gated || !statuses.includes("running")) return target.listRunsByStatus(statuses as never);
            let acted: () => void = () => {};
            const done = new Promise<void>((resolve) => {
              acted = resolve;
            });
            await new Promise<void>((go) => blocked.push({ go, acted: done }));
            const read = target.listRunsByStatus(statuses as never);
            void read.then(() => setImmediate(acted));
            return read;
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    h = await harness(
      kind,
      { main: inner },
      { config: { agents: { defaults: { queueMode: "interrupt" } } } },
      { clock: createManualClock(), channel: createFakeChannel(), store },
    );
    const first = await send("first");
    await eventually(async () => expect((await runOf(first)).status).toBe("running"), "first running");
    gated = true;
    const b = await send("b");
    const c = await send("c");
    await eventually(() => expect(blocked).toHaveLength(2), "both interrupts waiting");
    // b's interrupt aborts first; b's run starts and takes c (it answers it), and is held there.
    blocked.shift()?.go();
    await eventually(async () => expect((await runOf(c)).mergedInto).toBe(b), "b took c");
    expect((await runOf(b)).status).toBe("running");
    // c's interrupt comes late: c is taken, so it aborts nothing.
    const late = blocked.shift();
    late?.go();
    await late?.acted;
    holdC();
    expect(await wait(b)).toMatchObject({ status: "ok", reply: "reply to c" });
    expect(await wait(c)).toMatchObject({ status: "ok", mergedInto: b });
    expect((await runOf(first)).status).toBe("aborted");
    agent.release();
  });

  it("reject refuses a message to a busy session with a typed busy error, writing nothing", async () => {
    const agent = heldAgent();
    h = await harness(
      kind,
      { main: agent.agent },
      { config: { agents: { defaults: { queueMode: "reject" } } } },
    );
    const first = await send("first");
    await eventually(async () => expect((await runOf(first)).status).toBe("running"), "first running");
    const before = await h.store.countMessages(KEY);
    const refused = await send("again").catch((error: unknown) => error);
    expect(SessionsError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({ code: "busy", field: "sessionKey", retryAfterMs: expect.any(Number) });
    // A repeat of the accepted message is its run, not a refusal.
    expect(await send("first")).toBe(first);
    const inbound = await h.gateway.receive(fromSam("hello"));
    expect(inbound).toMatchObject({ rejected: { code: "busy" } });
    expect(inbound.runId).toBeUndefined();
    // The sender is told, not left wondering.
    const { channel } = h;
    await eventually(async () =>
      expect(channel.sent.map((s) => [s.target.to, s.message.text])).toContainEqual(["sam", BUSY_NOTICE]),
    );
    expect(await h.store.countMessages(KEY)).toBe(before);
    expect((await h.store.listRunsByStatus(["queued"])).length).toBe(0);
    const wire = await h.gateway
      .call("chat.send", { sessionKey: KEY, message: "x", idempotencyKey: "x" })
      .catch((e: unknown) => e);
    expect(wire).toMatchObject({ code: "busy" });
    agent.release();
    expect((await wait(first)).status).toBe("ok");
    // Idle again: accepted.
    expect((await wait(await send("later"))).status).toBe("ok");
  });

  it("sessions.patch sets and clears the mode, shows it on the row, and names the field when it is wrong", async () => {
    h = await harness(kind, {});
    await wait(await send("hello"));
    const set = await h.gateway.sessions.patch({ key: KEY, queueMode: "collect" });
    expect(set.entry.queueMode).toBe("collect");
    const listed = await h.gateway.sessions.list({});
    expect(listed.sessions.find((row) => row.key === KEY)?.queueMode).toBe("collect");
    const cleared = await h.gateway.sessions.patch({ key: KEY, queueMode: null });
    expect(cleared.entry.queueMode).toBeUndefined();
    const bad = await h.gateway.sessions
      .patch({ key: KEY, queueMode: "later" as "collect" })
      .catch((e: unknown) => e);
    expect(bad).toMatchObject({ code: "invalid_params", field: "queueMode" });
  });

  it("/queue in chat sets the session's mode for its owner, resets it, and answers usage otherwise", async () => {
    h = await harness(kind, {});
    const chat = (text: string, isOwner = true, id = text) =>
      h?.gateway.receive({
        channel: "chat",
        chatType: "direct",
        peerId: "sam",
        senderId: "sam",
        to: "sam",
        text,
        isOwner,
        messageId: id,
      });
    const set = await chat("/queue collect");
    expect(set?.queueCommand).toEqual({ mode: "collect", applied: true });
    const key = set?.sessionKey as string;
    expect((await h.store.getEntry(key))?.queueMode).toBe("collect");
    expect(await h.store.countMessages(key)).toBe(0);
    expect((await chat("/queue steer", false))?.queueCommand).toEqual({ mode: "steer", applied: false });
    expect((await h.store.getEntry(key))?.queueMode).toBe("collect");
    expect((await chat("/queue soon"))?.queueCommand).toEqual({ mode: null, applied: false });
    expect((await chat("/queue reset"))?.queueCommand).toEqual({ mode: "reset", applied: true });
    expect((await h.store.getEntry(key))?.queueMode).toBeUndefined();
    await eventually(() => {
      const notices = (h as Harness).channel.sent.map((s) => s.message.text);
      expect(notices).toContain("Queue mode: collect for this session.");
      expect(notices.some((n) => n.startsWith("Usage: /queue followup | collect"))).toBe(true);
      expect(notices).toContain("Only the owner can change this session's queue mode.");
    }, "the notices");
  });
});

describe("collect across a restart on the sqlite store", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("loses no message: every queued run ends visibly, and the next run sees every message", async () => {
    const agent = heldAgent();
    h = await harness("sqlite", { main: agent.agent });
    const send = (message: string) =>
      (h as Harness).gateway.chat.send({ sessionKey: KEY, message, idempotencyKey: `k-${message}` });
    const first = (await send("first")).runId;
    await eventually(async () => expect((await h?.store.getRun(first))?.status).toBe("running"), "running");
    await h.gateway.sessions.patch({ key: KEY, queueMode: "collect" });
    const queued = [(await send("a")).runId, (await send("b")).runId];
    h = await h.restart();
    for (const id of [first, ...queued]) {
      const run = await h.store.getRun(id);
      expect(run?.status === "queued" || run?.status === "running").toBe(false);
    }
    const after = (await send("c")).runId;
    expect((await h.gateway.agentWait({ runId: after, timeoutMs: 60_000 })).status).toBe("ok");
    expect(agent.turns.at(-1)?.users).toEqual(["first", "a", "b", "c"]);
    agent.release();
  });
});
