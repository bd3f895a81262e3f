// 1,000 concurrent sub-agent spawns: every one announced back to its requester, with peak RSS and loop stalls.
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  type ChannelAdapterV1,
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type ScriptedAgent,
} from "../src/index.js";
import { check, MB, SMOKE, sleep } from "./harness.js";
import { LOREM } from "./seed.js";

export const SPAWNS = SMOKE ? 20 : 1_000;
/** `agents.defaults.subagents.maxChildrenPerAgent` stays at its default (5), so the spawns fan out over requesters. */
const CHILDREN_PER_REQUESTER = 5;
const REQUESTERS = SPAWNS / CHILDREN_PER_REQUESTER;
const SPAWN_DEADLINE_MS = 120_000;

export interface SpawnOutcome {
  accepted: number;
  rejected: string[];
  announced: number;
  notDelivered: number;
  acceptedMs: number;
  announcedMs: number;
  doneMs: number;
  done: number;
  rssStartMb: number;
  peakRssMb: number;
  rssSamples: number;
  maxLoopStallMs: number;
}

export async function spawnBench(dir: string): Promise<SpawnOutcome> {
  const seen = new Set<string>();
  let platformIds = 0;
  // A fake in-memory chat platform (the shape of test-kit's createFakeChannel, with O(1) idempotency).
  const adapter: ChannelAdapterV1 = {
    specVersion: 1,
    channel: "chat",
    capabilities: { threads: true },
    async deliver(_target, _message, { idempotencyKey }) {
      if (seen.has(idempotencyKey)) return { messageIds: [`dup-${idempotencyKey}`] };
      seen.add(idempotencyKey);
      return { messageIds: [`m${++platformIds}`] };
    },
  };
  const script: ScriptedAgent = (turn) => {
    if (turn.kind === "subagent") return `Result: summarised ${turn.text.length} characters of the thread.`;
    if (turn.kind === "subagent_announce")
      return "Result: the thread is summarised.\nNotes: nothing unusual.";
    return "On it.";
  };
  const gateway = createGateway({
    runner: createScriptedRunner({ agents: { main: script } }),
    store: createSqliteStore({ path: join(dir, "spawn.db") }),
    adapters: [adapter],
  });
  await gateway.ready;

  // The requesters: group chats with a delivery context, so announces are enqueued and delivered.
  const requesters: string[] = [];
  const chatRuns: string[] = [];
  for (let i = 0; i < REQUESTERS; i++) {
    const received = await gateway.receive({
      channel: "chat",
      chatType: "group",
      peerId: `room-${i}`,
      senderId: `user-${i}`,
      to: `room-${i}`,
      text: "Please fan this out to a few helpers.",
      messageId: `in-${i}`,
    });
    requesters.push(received.sessionKey);
    if (received.runId !== undefined) chatRuns.push(received.runId);
  }
  await Promise.all(chatRuns.map((runId) => gateway.agentWait({ runId, timeoutMs: 30_000 })));
  check(new Set(requesters).size === REQUESTERS, "each requester has its own session");

  // RSS every 20 ms. The scripted runner and the fake platform never wait on I/O, so the whole burst runs on
  // microtasks and a plain interval barely fires: gateway events also take a sample when 20 ms have passed.
  const rssStart = process.memoryUsage().rss;
  let peakRss = rssStart;
  let rssSamples = 0;
  let lastSample = performance.now();
  const sample = () => {
    lastSample = performance.now();
    const rss = process.memoryUsage().rss;
    rssSamples++;
    if (rss > peakRss) peakRss = rss;
  };
  // The same interval doubles as a heartbeat: the longest gap between its ticks is the longest event-loop stall.
  let lastBeat = performance.now();
  let maxGap = 0;
  const beat = () => {
    const t = performance.now();
    maxGap = Math.max(maxGap, t - lastBeat);
    lastBeat = t;
  };
  const sampler = setInterval(() => {
    beat();
    sample();
  }, 20);

  let announced = 0;
  let notDelivered = 0;
  let expected = SPAWNS;
  let allAnnounced: () => void = () => {};
  const announcedPromise = new Promise<void>((resolve) => {
    allAnnounced = resolve;
  });
  const unsubscribe = gateway.subscribe((event) => {
    if (performance.now() - lastSample >= 20) sample();
    if (event.type !== "delivery" || event.record.kind !== "subagent_announce") return;
    if (event.record.status === "delivered") announced++;
    else notDelivered++;
    if (announced + notDelivered >= expected) allAnnounced();
  });

  const t0 = performance.now();
  const results = await Promise.all(
    Array.from({ length: SPAWNS }, (_, j) =>
      gateway.callTool(requesters[j % REQUESTERS] as string, "sessions_spawn", {
        task: `Summarise thread ${j}: ${LOREM.slice(0, 60 + (j % 100))}`,
      }),
    ),
  );
  const acceptedMs = performance.now() - t0;
  sample();
  const rejected = results
    .map((r) => r as { status?: string; code?: string; error?: string })
    .filter((r) => r.status !== "accepted")
    .map((r) => `${r.status}/${r.code}: ${r.error}`);
  const accepted = SPAWNS - rejected.length;
  expected = accepted;
  if (announced + notDelivered >= expected) allAnnounced();

  let deadline: NodeJS.Timeout | undefined;
  await Promise.race([
    announcedPromise,
    new Promise<void>((resolve) => {
      deadline = setTimeout(resolve, SPAWN_DEADLINE_MS);
    }),
  ]);
  clearTimeout(deadline);
  const announcedMs = performance.now() - t0;
  sample();
  let done = 0;
  for (;;) {
    done = (await gateway.store.listSubagents({ statuses: ["done"] })).length;
    if (done >= accepted || performance.now() - t0 > SPAWN_DEADLINE_MS) break;
    await sleep(10);
  }
  const doneMs = performance.now() - t0;
  sample();
  await new Promise<void>((resolve) => setImmediate(resolve));
  beat();
  clearInterval(sampler);
  unsubscribe();
  await gateway.close({ drainMs: 5000 });
  return {
    accepted,
    rejected,
    announced,
    notDelivered,
    acceptedMs,
    announcedMs,
    doneMs,
    done,
    rssStartMb: rssStart / MB,
    peakRssMb: peakRss / MB,
    rssSamples,
    maxLoopStallMs: Math.max(0, maxGap - 20),
  };
}
