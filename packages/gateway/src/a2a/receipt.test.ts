import { type Logger, silentLogger } from "@sessions/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import type { GatewayOptions } from "../gateway.js";
import type { ScriptedAgent } from "../runner/scripted.js";
import type { SessionStore } from "../store/types.js";
import {
  cleanupDirs,
  createFakeChannel,
  eventually,
  type Harness,
  harness,
  openStore,
  STORE_KINDS,
  TREE_OPS,
  treeMessage,
} from "../test-kit.js";

afterAll(cleanupDirs);

const OPS = TREE_OPS;
const config = { tools: { sessions: { visibility: "agent" as const } } };

interface Receipt {
  id?: string;
  status: string;
  messageIds?: string[];
  reason?: string;
}

/** A promise to hold a run on, and its release. */
function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe.each(STORE_KINDS)("delivery receipts of sessions_send on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  async function start(agent: ScriptedAgent, overrides: Partial<GatewayOptions> = {}, store?: SessionStore) {
    h = await harness(
      kind,
      { main: agent },
      { config, ...overrides },
      store === undefined ? undefined : { clock: createManualClock(), channel: createFakeChannel(), store },
    );
    for (const inbound of [treeMessage("alice", "hi"), treeMessage("ops", "hi")]) {
      const { runId } = await h.gateway.receive(inbound);
      await h.gateway.agentWait({ runId: runId as string, timeoutMs: 60_000 });
    }
  }

  const send = async (message: string, timeoutSeconds = 30) =>
    (await h.gateway.callTool("main", "sessions_send", { sessionKey: OPS, message, timeoutSeconds })) as {
      status: string;
      runId: string;
      delivery: Receipt;
    };
  const read = async (deliveryId: string, sessionKey = OPS) =>
    (await h.gateway.callTool("main", "sessions_history", { sessionKey, limit: 1, deliveryId })) as {
      status: string;
      code?: string;
      delivery?: Receipt;
    };

  it("gives the announce's delivery id at once; it reads pending until the announce, then delivered with the platform's ids", async () => {
    const announce = gate();
    await start(async (turn) => {
      if (turn.kind === "ping_pong") return "REPLY_SKIP";
      if (turn.kind === "announce") {
        await announce.opened;
        return "ops: all green";
      }
      return turn.kind === "inter_session" ? "green" : "ok";
    });
    const sent = await send("status?");
    expect(sent).toMatchObject({ status: "ok", delivery: { id: expect.any(String), status: "pending" } });
    const id = sent.delivery.id as string;
    expect(await read(id)).toMatchObject({ status: "ok", delivery: { id, status: "pending" } });

    h.channel.failNext(1, new Error("platform unavailable"));
    announce.open();
    await eventually(async () => expect((await h.store.getDelivery(id))?.attempts).toBe(1));
    expect((await read(id)).delivery).toEqual({ id, status: "pending", reason: "platform unavailable" });
    await h.clock.advance(60_000);
    await eventually(async () => expect((await read(id)).delivery?.status).toBe("delivered"));
    const posted = h.channel.sent.findIndex((s) => s.message.text === "ops: all green");
    expect(posted).toBeGreaterThanOrEqual(0);
    expect((await read(id)).delivery).toEqual({ id, status: "delivered", messageIds: [`m${posted + 1}`] });
    expect((await h.gateway.deliveries.get({ id })).kind).toBe("announce");
  });

  it("names what held an announce back: the target's ANNOUNCE_SKIP, or the send policy rule", async () => {
    await start(
      (turn) => {
        if (turn.kind === "ping_pong") return "REPLY_SKIP";
        if (turn.kind === "announce") return turn.text.includes("quiet") ? "ANNOUNCE_SKIP" : "posting";
        return "fine";
      },
      {
        config: {
          ...config,
          session: {
            sendPolicy: { rules: [{ match: { channel: "chat", chatType: "group" }, action: "deny" }] },
          },
        },
      },
    );
    const quiet = await send("quiet please");
    const loud = await send("loud");
    await eventually(async () => {
      expect((await read(quiet.delivery.id as string)).delivery).toMatchObject({
        status: "suppressed",
        reason: "ANNOUNCE_SKIP",
      });
      expect((await read(loud.delivery.id as string)).delivery).toMatchObject({
        status: "suppressed",
        reason: expect.stringContaining("session.sendPolicy.rules[0]"),
      });
    });
    expect(h.channel.sent.map((s) => s.message.text)).not.toContain("posting");
  });

  it("says at once why a failed target run announces nothing, and the receipt read later says the same", async () => {
    await start((turn) => {
      if (turn.kind === "inter_session") throw new Error("model exploded");
      return "ok";
    });
    const failed = await send("boom");
    expect(failed).toMatchObject({
      status: "error",
      delivery: { status: "suppressed", reason: expect.stringContaining("model exploded") },
    });
    await eventually(async () =>
      expect((await read(failed.delivery.id as string)).delivery).toEqual(failed.delivery),
    );
  });

  it("gives an aborted target run's outcome as the receipt records it", async () => {
    const target = gate();
    await start(async (turn) => {
      if (turn.kind === "inter_session") await target.opened;
      return "ok";
    });
    const sending = send("wait for it");
    await eventually(async () => {
      const runs = await h.gateway.runs.list({ sessionKey: OPS });
      expect(runs.runs.some((run) => run.status === "running")).toBe(true);
    }, "the target run running");
    await h.gateway.chat.abort({ sessionKey: OPS });
    const aborted = await sending;
    expect(aborted.delivery).toMatchObject({
      status: "suppressed",
      reason: expect.stringMatching(/^the target run ended aborted/),
    });
    await eventually(async () =>
      expect((await read(aborted.delivery.id as string)).delivery).toEqual(aborted.delivery),
    );
    target.open();
  });

  it("says a target run stopped at its tree's deadline still has an outcome to come: the deadline notice", async () => {
    let result: { delivery?: Receipt } | undefined;
    await start(async (turn) => {
      if (turn.kind === "inter_session") await turn.sleep(3_600_000);
      if (turn.text === "go") {
        result = await turn.callTool("sessions_send", {
          sessionKey: OPS,
          message: "think",
          timeoutSeconds: 600,
        });
        return "sent";
      }
      return "ok";
    });
    await h.gateway.agent({
      sessionKey: "main",
      message: "go",
      idempotencyKey: "deadline",
      budget: { seconds: 30 },
    });
    await eventually(async () => {
      const runs = await h.gateway.runs.list({ sessionKey: OPS });
      expect(runs.runs.some((run) => run.status === "running")).toBe(true);
    }, "the target run running");
    await h.clock.advance(30_000);
    await eventually(() => expect(result).toBeDefined(), "the send's result");
    const id = result?.delivery?.id as string;
    expect(result?.delivery).toEqual({ id, status: "pending" });
    await eventually(async () => {
      const delivery = (await read(id)).delivery;
      expect(delivery).toMatchObject({ id, status: "delivered" });
    });
    expect(h.channel.sent.map((m) => m.message.text)).toContainEqual(
      expect.stringMatching(/^Stopped: this request's budget is spent \(deadline .* passed\)\.$/),
    );
  });

  it("resolves a send whose follow-up failed on a gateway that stays up: suppressed with the failure, not pending", async () => {
    // While armed, the store fails every read of the target session (a fault that is no outage to wait out).
    let failing = false;
    const base = openStore(kind).store;
    const store: SessionStore = new Proxy(base, {
      get(target, prop, receiver) {
        if (prop === "getEntry") {
          return async (key: string) => {
            if (failing && key === OPS) throw new Error("the disk is on fire");
            return target.getEntry(key);
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    // The fault lasts until the gateway has given the follow-up up.
    const errors: string[] = [];
    const logger: Logger = {
      ...silentLogger,
      error: (message) => {
        errors.push(message);
        if (message === "the follow-up of a sessions_send failed") failing = false;
      },
      child: () => logger,
    };
    const target = gate();
    await start(
      async (turn) => {
        if (turn.kind === "inter_session") {
          await target.opened;
          return "green";
        }
        return turn.kind === "ping_pong" ? "REPLY_SKIP" : "ok";
      },
      { logger },
      store,
    );
    const sent = await send("status?", 0);
    const id = sent.delivery.id as string;
    await eventually(async () => expect((await h.store.getRun(sent.runId))?.status).toBe("running"));
    failing = true;
    target.open();
    await eventually(async () =>
      expect((await read(id)).delivery).toEqual({
        id,
        status: "suppressed",
        reason: "the announce step failed: the disk is on fire",
      }),
    );
    expect(errors).toEqual(["the follow-up of a sessions_send failed"]);
    expect(h.channel.sent.filter((m) => m.message.text.includes("green"))).toHaveLength(0);
    expect((await h.store.getRun(sent.runId))?.followUpDone).toBe(true);
  });

  it("shows a delivery only through the session it went to", async () => {
    await start((turn) =>
      turn.kind === "announce" ? "posted" : turn.kind === "ping_pong" ? "REPLY_SKIP" : "ok",
    );
    const sent = await send("hello");
    await eventually(async () =>
      expect((await read(sent.delivery.id as string)).delivery?.status).toBe("delivered"),
    );
    expect(await read(sent.delivery.id as string, "main")).toMatchObject({
      status: "not_found",
      code: "delivery_not_found",
    });
    expect(await read("announce_no-such-run")).toMatchObject({
      status: "not_found",
      code: "delivery_not_found",
    });
    expect(await read("01ARZ3NDEKTSV4RRFFQ69G5FAV")).toMatchObject({ status: "not_found" });
  });

  it.runIf(kind === "sqlite")(
    "keeps a receipt's id across a restart: the send the restart cut off reads as suppressed",
    async () => {
      const held = gate();
      await start(async (turn) => {
        if (turn.kind === "inter_session") await held.opened;
        return turn.kind === "ping_pong" ? "REPLY_SKIP" : "ok";
      });
      const accepted = await send("long job", 0);
      expect(accepted.delivery.status).toBe("pending");
      h = await h.restart();
      await eventually(async () =>
        expect((await read(accepted.delivery.id as string)).delivery).toMatchObject({
          id: accepted.delivery.id,
          status: "suppressed",
          reason: expect.stringContaining("nothing announced"),
        }),
      );
      held.open();
    },
  );
});
