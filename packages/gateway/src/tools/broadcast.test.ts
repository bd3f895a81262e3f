import type { SessionsSendResult } from "@sessions/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { AgentRunner } from "../runner/types.js";
import { cleanupDirs, type Harness, harness, roomMessage, STORE_KINDS } from "../test-kit.js";
import { messageText } from "../transcript.js";

afterAll(cleanupDirs);

const room = (name: string, agent = "main") => `agent:${agent}:chat:group:${name}`;
const A = room("a");

/** A message in the room `#name`. */
const say = roomMessage;

/**
 * Session A makes the `sessions_send` call it is given (as JSON in its message) and keeps the result; every other
 * session answers a message from another session with `ack <its key>` and stays quiet in the reply-back and announce.
 */
function broadcaster(results: SessionsSendResult[]): AgentRunner {
  return {
    async run(request) {
      if (request.kind === "ping_pong") return { reply: "REPLY_SKIP" };
      if (request.kind === "announce") return { reply: "ANNOUNCE_SKIP" };
      const text = messageText(request.input);
      if (request.sessionKey === A && text.startsWith("{")) {
        const send = request.tools.find((tool) => tool.name === "sessions_send");
        results.push((await send?.execute(JSON.parse(text))) as SessionsSendResult);
        return { reply: "sent" };
      }
      return { reply: request.kind === "inter_session" ? `ack ${request.sessionKey}` : "ok" };
    },
  };
}

describe.each(STORE_KINDS)("sessions_send by label on the %s store", (kind) => {
  let h: Harness;
  const results: SessionsSendResult[] = [];
  afterEach(async () => {
    results.length = 0;
    await h?.close();
  });

  async function start(config: Record<string, unknown> = {}) {
    h = await harness(
      kind,
      {},
      {
        runner: broadcaster(results),
        config: { tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: false } }, ...config },
      },
    );
  }
  /** Rooms `names` exist (one message each), with `label` when given. */
  async function rooms(label: string | undefined, ...keys: string[]) {
    for (const key of keys) {
      const [, agent, , , name] = key.split(":");
      const { runId } = await h.gateway.receive({ ...say(name as string, "hi"), agentId: agent });
      await h.gateway.agentWait({ runId: runId as string, timeoutMs: 60_000 });
      if (label !== undefined) await h.gateway.sessions.patch({ key, label });
    }
  }
  /** A's run making `params` as its sessions_send call; its result. */
  async function send(
    params: Record<string, unknown>,
  ): Promise<{ result: SessionsSendResult; runId: string }> {
    const { runId } = await h.gateway.receive(say("a", JSON.stringify(params)));
    await h.gateway.agentWait({ runId: runId as string, timeoutMs: 60_000 });
    return { result: results.at(-1) as SessionsSendResult, runId: runId as string };
  }
  const received = async (key: string) =>
    (await h.store.readMessages(key, { limit: 50 }))
      .filter((m) => m.provenance?.kind === "inter_session")
      .map((m) => messageText(m));

  it("sends to every session with the label it may see, each its own run of the tree, and lists each reply", async () => {
    await start();
    const [b, c, d] = [room("b"), room("c"), room("d")];
    const other = room("x", "ops");
    await rooms(undefined, A);
    await rooms("team", b, c, d, other);
    await rooms("elsewhere", room("e"));
    const { result, runId } = await send({ label: "team", message: "standup in 5" });
    // Agent "ops" is out of reach (agent-to-agent is off): not sent to, and not named.
    expect(result).toEqual({
      status: "ok",
      targets: [b, c, d].map((key) => ({
        status: "ok",
        runId: expect.any(String),
        sessionKey: key,
        reply: `ack ${key}`,
        delivery: expect.objectContaining({ status: "pending" }),
      })),
    });
    for (const key of [b, c, d]) expect(await received(key)).toEqual(["standup in 5"]);
    expect(await received(other)).toEqual([]);
    expect(await received(room("e"))).toEqual([]);
    const tree = await h.gateway.runs.tree({ runId });
    const sent = tree.runs.filter((run) => run.kind === "inter_session");
    expect(sent.map((run) => run.sessionKey).sort()).toEqual([b, c, d]);
    expect(new Set(result.targets?.map((target) => target.runId))).toEqual(new Set(sent.map((r) => r.runId)));
  });

  it("takes any of several labels, narrowed to one agent, and leaves out the requester's own session", async () => {
    await start({
      tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["*"] } },
    });
    const [b, c] = [room("b"), room("c")];
    const ops = room("y", "ops");
    await rooms("dev", A, b);
    await rooms("qa", c, ops);
    const narrowed = await send({
      labels: ["dev", "qa"],
      agentId: "main",
      message: "freeze",
      timeoutSeconds: 0,
    });
    expect(narrowed.result.status).toBe("accepted");
    expect(narrowed.result.targets?.map((target) => [target.sessionKey, target.status])).toEqual([
      [b, "accepted"],
      [c, "accepted"],
    ]);
    const everyone = await send({ labels: ["qa"], message: "all hands", timeoutSeconds: 0 });
    expect(everyone.result.targets?.map((target) => target.sessionKey)).toEqual([c, ops]);
  });

  it("refuses a selector matching more sessions than maxBroadcastTargets, sending nothing", async () => {
    await start({
      tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: false, maxBroadcastTargets: 2 } },
    });
    const targets = [room("b"), room("c"), room("d")];
    await rooms(undefined, A);
    await rooms("team", ...targets);
    const { result } = await send({ label: "team", message: "too many" });
    expect(result).toMatchObject({ status: "error", code: "too_many_targets", limit: 2 });
    expect(result.error).toContain("matches 3 sessions, more than the 2");
    for (const key of targets) expect(await received(key)).toEqual([]);
    const none = await send({ label: "nobody", message: "hello?" });
    expect(none.result).toMatchObject({ status: "not_found", code: "not_found", targets: [] });
  });

  it("checks each target against the tree's budget on its own: those past it are refused, the others sent", async () => {
    // A tree of 3 runs at most: A's run and two sends; the third target is refused.
    await start({ agents: { defaults: { budget: { runs: 3 } } } });
    const targets = [room("b"), room("c"), room("d")];
    await rooms(undefined, A);
    await rooms("team", ...targets);
    const { result } = await send({ label: "team", message: "who is first?" });
    expect(result).toMatchObject({ status: "error", code: "partial" });
    const statuses = result.targets?.map((target) => target.code ?? target.status).sort();
    expect(statuses).toEqual(["budget_exceeded", "ok", "ok"]);
    expect(result.error).toContain("2 ok, 1 forbidden");
  });
});
