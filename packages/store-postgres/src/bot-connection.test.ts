import type { ChildProcess } from "node:child_process";
import { createFakeTelegramApi, telegramUpdate } from "@sessions/testing";
import { afterAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { createPostgresStore } from "./store.js";
import { eventually, freshSchema } from "./testing/helpers.js";
import { spawnTelegramGateway } from "./testing/spawn-gateway.js";

const url = inject("postgresUrl");
const LEASE_TTL_MS = 1500;
const children = new Set<ChildProcess>();
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});

interface BotGateway {
  name: string;
  child: ChildProcess;
  log: string[];
  /** When each of its getUpdates calls was read from its output (a moment after it went out). */
  polls: number[];
  /** When each of its requests for the bot's lease that another gateway held was read from its output. */
  refusals: number[];
  /** It exited and all of its output has been read: no poll of it is stamped after this. */
  exited: Promise<void>;
}

function startGateway(name: string, schema: string, apiRoot: string, token: string): Promise<BotGateway> {
  return new Promise((resolve, reject) => {
    const child = spawnTelegramGateway(
      children,
      { url, schema, apiRoot, token },
      { NAME: name, LEASE_TTL_MS: String(LEASE_TTL_MS) },
    );
    const exited = new Promise<void>((done) => child.on("close", () => done()));
    const gateway: BotGateway = { name, child, log: [], polls: [], refusals: [], exited };
    let pending = "";
    child.stdout?.on("data", (chunk) => {
      gateway.log.push(String(chunk));
      pending += String(chunk);
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        if (line === `poll ${name}`) gateway.polls.push(Date.now());
        if (line === `refused ${name}`) gateway.refusals.push(Date.now());
        if (line === "ready") resolve(gateway);
      }
    });
    child.stderr?.on("data", (chunk) => gateway.log.push(String(chunk)));
    child.on("exit", (code) => reject(new Error(`${name} exited ${code}: ${gateway.log.join("")}`)));
  });
}

describe("a Telegram bot on several gateways sharing one Postgres", () => {
  it("is polled by exactly one gateway, taken over after a stop and after a SIGKILL, each update handled once", async () => {
    const fake = await createFakeTelegramApi();
    cleanup.push(() => fake.close());
    const schema = freshSchema("telegram");
    const gateways = await Promise.all(
      ["g1", "g2"].map((name) => startGateway(name, schema, fake.apiRoot, fake.token)),
    );
    onTestFailed(() => {
      for (const g of gateways) process.stderr.write(`--- ${g.name}\n${g.log.join("")}\n`);
    });
    const polling = (since: number) => gateways.filter((g) => g.polls.some((at) => at >= since));
    let sent = 0;
    const send = (count: number) => {
      for (let i = 0; i < count; i++) {
        sent++;
        fake.pushUpdate(telegramUpdate("private-text", { text: `m${sent}` }));
      }
    };
    const answered = () => fake.callsOf("sendMessage").map((c) => String(c.params.text));

    // Exactly one gateway polls: the other asks for the bot's lease, and is still refused a lease's term after
    // the first poll (the holder renews it).
    await eventually(() => polling(0).length > 0);
    const firstPoll = polling(0)[0]?.polls[0] as number;
    const standby = gateways.find((g) => g !== polling(0)[0]) as BotGateway;
    send(3);
    await eventually(() => answered().length === 3);
    await eventually(
      () => standby.refusals.some((at) => at >= firstPoll + LEASE_TTL_MS),
      "the other gateway refused the lease a term after the first poll",
    );
    send(1);
    await eventually(() => answered().length === 4);
    // Every poll so far, and every answer, came from one gateway.
    expect(polling(0)).toHaveLength(1);
    const first = polling(0)[0] as BotGateway;
    expect(new Set(answered().map((text) => text.split(":")[0]))).toEqual(new Set([first.name]));

    // A graceful stop hands the bot over at once.
    first.child.kill("SIGTERM");
    await first.exited;
    const second = gateways.find((g) => g !== first) as BotGateway;
    const stoppedAt = Date.now();
    await eventually(() => second.polls.some((at) => at >= stoppedAt));
    send(3);
    await eventually(() => answered().length === 7);

    // A third gateway waits; SIGKILL the holder and it takes the bot over when the lease lapses.
    const third = await startGateway("g3", schema, fake.apiRoot, fake.token);
    gateways.push(third);
    const thirdReady = Date.now();
    await eventually(
      () => third.refusals.some((at) => at >= thirdReady + LEASE_TTL_MS),
      "the third gateway refused the lease for a term",
    );
    expect(third.polls).toEqual([]);
    const killedAt = Date.now();
    second.child.kill("SIGKILL");
    await second.exited;
    // From here on only the third polls: it takes the bot over, and a poll of the second would have been read.
    const deadAt = Date.now();
    send(3);
    await eventually(() => third.polls.some((at) => at >= deadAt), "a poll of the third after the SIGKILL");
    await eventually(() => answered().length >= 10);
    process.stdout.write(
      `telegram polling taken over ${(third.polls[0] as number) - killedAt} ms after SIGKILL\n`,
    );

    // Every update answered exactly once, by whichever gateway held the bot. One run per update: the third hands
    // its polls' updates over one at a time, and a repeat it ran again would be recorded before the last one's run.
    await eventually(
      () => answered().some((text) => text.endsWith(": m10")),
      "the answer to the last update",
    );
    const store = await createPostgresStore({ connectionString: url, schema });
    const runs = await store
      .listRunsByStatus(["queued", "running", "ok", "error", "timeout", "aborted"])
      .finally(() => store.close());
    expect(runs).toHaveLength(10);
    const texts = answered().map((text) => text.replace(/^g\d: /, ""));
    expect(texts.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `m${i + 1}`).sort());
    expect(polling(deadAt)).toEqual([third]);
    third.child.kill("SIGTERM");
    await third.exited;
  });
});
