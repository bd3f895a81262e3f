import { chunkMessage } from "@sessions/core";
import { createScriptedRunner, type ScriptedAgent, systemClock } from "@sessions/gateway";
import { deliveredReply, matrixEvent, writeWords } from "@sessions/testing";
import { afterEach, describe, expect, it } from "vitest";
import { type E2E, startE2E } from "./e2e.fixture.js";

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

/** A reply streamed ten words at a time: past 8,000 characters when asked for a long one. */
const writer: ScriptedAgent = (turn) => writeWords(turn, turn.text.includes("long") ? 1300 : 40);

async function start(streaming?: "off" | "partial" | "block"): Promise<E2E> {
  e = await startE2E(
    {},
    {
      gateway: {
        clock: systemClock,
        runner: createScriptedRunner({ agents: { main: writer } }),
        ...(streaming === undefined ? {} : { config: { channels: { matrix: { streaming } } } }),
      },
      adapter: { streamIntervalMs: 40, typing: false },
    },
  );
  return e;
}

const bodies = (x: E2E) => x.hs.shown(x.hs.rooms.ops).map((m) => m.body);

describe("streaming replies into Matrix through real matrix-js-sdk", () => {
  it("does not stream unless asked: the reply is sent whole", async () => {
    const x = await start();
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text", { content: { body: "write please" } }));
    const reply = await deliveredReply(x.gateway);
    expect(bodies(x)).toEqual([reply]);
    expect(x.messages().filter((m) => m.content["m.new_content"] !== undefined)).toEqual([]);
  });

  it("replaces one message as the reply grows (partial), ending as the reply", async () => {
    const x = await start("partial");
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text", { content: { body: "write please" } }));
    const reply = await deliveredReply(x.gateway);
    expect(bodies(x)).toEqual([reply]);
    const edits = x.messages().filter((m) => m.content["m.new_content"] !== undefined);
    expect(edits.length).toBeGreaterThan(0);
    expect(edits.every((m) => String(m.content.body).startsWith("* "))).toBe(true);
  });

  it("goes on in further messages past 8,000 characters", async () => {
    const x = await start("partial");
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text", { content: { body: "write a long one" } }));
    const reply = await deliveredReply(x.gateway);
    expect(reply.length).toBeGreaterThan(8000);
    expect(bodies(x)).toEqual(chunkMessage(reply, 8000));
  });
});
