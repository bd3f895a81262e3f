import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { GatewayEvent } from "../gateway.js";
import type { ScriptedAgent } from "../runner/scripted.js";
import type { AgentRunner } from "../runner/types.js";
import type { StoredMessage } from "../store/types.js";
import { cleanupDirs, eventually, type Harness, harness, roomMessage, STORE_KINDS } from "../test-kit.js";
import { messageText } from "../transcript.js";

afterAll(cleanupDirs);

const room = (name: string) => `agent:main:chat:group:${name}`;
const A = room("a");
const B = room("b");
const C = room("c");

/** Each session passes what it is sent on to the next one (`next`), and keeps the tool's answer in its reply. */
function relay(next: Record<string, string>): ScriptedAgent {
  return async (turn) => {
    if (turn.kind === "ping_pong") return "REPLY_SKIP";
    if (turn.kind === "announce") return "ANNOUNCE_SKIP";
    const to = next[turn.sessionKey];
    if (to === undefined || (turn.kind !== "inter_session" && turn.text !== "start")) return "ok";
    const result = await turn.callTool<{ status: string; code?: string }>("sessions_send", {
      sessionKey: to,
      message: `from ${turn.sessionKey}`,
      timeoutSeconds: 0,
    });
    return `${result.status}${result.code ? ` ${result.code}` : ""}`;
  };
}

/** A message in the room `#name`. */
const say = roomMessage;

const config = (extra: Record<string, unknown> = {}) => ({
  tools: { sessions: { visibility: "agent" as const } },
  ...extra,
});

describe.each(STORE_KINDS)("the guards of a tree on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  async function rooms(...names: string[]) {
    for (const name of names) {
      const { runId } = await h.gateway.receive(say(name, "hi"));
      await h.gateway.agentWait({ runId: runId as string, timeoutMs: 60_000 });
    }
  }

  /** The tool result the guard gave the session's last run, from its transcript. */
  async function refusal(sessionKey: string) {
    let found: Record<string, unknown> | undefined;
    await eventually(async () => {
      const messages: StoredMessage[] = await h.store.readMessages(sessionKey, { limit: 50 });
      const results = messages.flatMap((m) =>
        m.role === "toolResult" && Array.isArray(m.content)
          ? (m.content as { output?: Record<string, unknown> }[]).map((part) => part.output ?? {})
          : [],
      );
      found = results.find((output) => output.status === "forbidden");
      expect(found).toBeDefined();
    }, `a refused call in ${sessionKey}`);
    return found as Record<string, unknown>;
  }

  it("refuses the message that would go past maxHops, naming the limit and the chain, and counts hops in provenance", async () => {
    h = await harness(
      kind,
      { main: relay({ [A]: B, [B]: C, [C]: A }) },
      {
        config: config({ session: { agentToAgent: { maxHops: 2 } } }),
      },
    );
    await rooms("a", "b", "c");
    const events: GatewayEvent[] = [];
    h.gateway.subscribe((event) => events.push(event));
    const start = await h.gateway.receive(say("a", "start"));
    const refused = await refusal(C);
    expect(refused).toMatchObject({ code: "max_hops", limit: 2, chain: [A, B, C, A] });
    expect(String(refused.error)).toContain("message 3 of a chain limited to 2");
    // The messages that went through say how far from the first they are; so do the reply-back turns and
    // announce steps that follow them (at their send's hop).
    const inter = async (key: string) =>
      (await h.store.readMessages(key, { limit: 50 })).filter((m) => m.provenance !== undefined);
    const sends = async (key: string) =>
      (await inter(key)).filter((m) => String(m.content).startsWith("from ")).map((m) => m.provenance?.hops);
    expect(await sends(B)).toEqual([1]);
    expect(await sends(C)).toEqual([2]);
    expect(await sends(A)).toEqual([]);
    await eventually(async () => {
      const followUps = [...(await inter(A)), ...(await inter(B)), ...(await inter(C))];
      expect(followUps.length).toBeGreaterThan(2);
      for (const m of followUps) expect([1, 2]).toContain(m.provenance?.hops);
    });
    // The tree holds three runs with a message each way; the run that was refused saw it as a guard event.
    const tree = await h.gateway.runs.tree({ runId: start.runId as string });
    const sent = tree.runs
      .filter((run) => run.kind === "inter_session")
      .sort((a, b) => (a.hops ?? 0) - (b.hops ?? 0));
    expect(sent.map((run) => [run.sessionKey, run.hops])).toEqual([
      [B, 1],
      [C, 2],
    ]);
    await eventually(() =>
      expect(
        events.find((e) => e.type === "agent" && e.stream === "guard" && e.runId === sent[1]?.runId),
      ).toMatchObject({ data: { code: "max_hops", limit: 2, chain: [A, B, C, A] } }),
    );
    // And it is kept with the run's end: in its record, in runs.tree, across restarts and gateways.
    const guard = { code: "max_hops", tool: "sessions_send", limit: 2, chain: [A, B, C, A] };
    await eventually(async () =>
      expect((await h.store.getRun(sent[1]?.runId as string))?.guards).toEqual([guard]),
    );
    const again = await h.gateway.runs.tree({ runId: start.runId as string });
    expect(again.runs.find((run) => run.runId === sent[1]?.runId)?.guards).toEqual([guard]);
    expect(again.runs.filter((run) => run.guards !== undefined)).toHaveLength(1);
  });

  it("lets an agent's own maxHops override the default", async () => {
    h = await harness(
      kind,
      { main: relay({ [A]: B, [B]: C, [C]: A }) },
      {
        config: config({
          session: { agentToAgent: { maxHops: 2 } },
          agents: { list: [{ id: "main", maxHops: 3 }] },
        }),
      },
    );
    await rooms("a", "b", "c");
    await h.gateway.receive(say("a", "start"));
    // Hop 3 (C → A) goes through; A's run then tries hop 4 (to B), refused loop or hops: whichever comes first.
    const refused = await refusal(A);
    expect(refused).toMatchObject({ code: "max_hops", limit: 3, chain: [A, B, C, A, B] });
  });

  it("refuses a pair of sessions sending to each other beyond what a send and its reply-back allow", async () => {
    h = await harness(
      kind,
      { main: relay({ [A]: B, [B]: A }) },
      {
        config: config({ session: { agentToAgent: { maxPingPongTurns: 1 } } }),
      },
    );
    await rooms("a", "b");
    await h.gateway.receive(say("a", "start"));
    // A → B and B → A are the two messages a send and one reply-back turn make; A's next send to B is a loop.
    const refused = await refusal(A);
    expect(refused).toMatchObject({ code: "loop", limit: 2, chain: [A, B, A, B] });
    expect(String(refused.error)).toContain("have already sent each other 2 messages in this tree");
  });

  it("lets only as many parallel sends of one step through as the loop guard allows", async () => {
    const results: { status: string; code?: string }[] = [];
    const runner: AgentRunner = {
      async run(request) {
        if (request.sessionKey !== A || request.kind === "ping_pong" || request.kind === "announce")
          return { reply: request.kind === "announce" ? "ANNOUNCE_SKIP" : "REPLY_SKIP" };
        if (messageText(request.input) !== "start") return { reply: "ok" };
        const send = request.tools.find((t) => t.name === "sessions_send");
        // Three calls of one model step, made at once (as an AI SDK step runs its tool calls).
        const answers = await Promise.all(
          [1, 2, 3].map((n) => send?.execute({ sessionKey: B, message: `parallel ${n}`, timeoutSeconds: 0 })),
        );
        results.push(...(answers as { status: string; code?: string }[]));
        return { reply: "sent" };
      },
    };
    // A send and its reply-back turns may exchange maxPingPongTurns + 1 = 2 messages between A and B.
    h = await harness(
      kind,
      {},
      { runner, config: config({ session: { agentToAgent: { maxPingPongTurns: 1 } } }) },
    );
    await rooms("a", "b");
    const { runId } = await h.gateway.receive(say("a", "start"));
    await h.gateway.agentWait({ runId: runId as string, timeoutMs: 60_000 });
    expect(results.map((r) => r.code ?? r.status).sort()).toEqual(["accepted", "accepted", "loop"]);
  });
});
