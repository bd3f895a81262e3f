// Throughput of the hot core paths: `pnpm bench` (or `pnpm --filter @sessions/core bench`).
// Targets on a 2-core machine: ≥ 1,000,000 parses/s, ≥ 300,000 policy decisions/s.
// `BENCH_SMOKE=1` (`pnpm bench:smoke`) times each task for a few milliseconds: it checks the bench runs, not the targets.
import { Bench } from "tinybench";
import {
  checkSessionAccess,
  createAgentToAgentPolicy,
  normalizeSessionKey,
  parseSessionKey,
  resolveSendPolicy,
  type SendPolicyConfig,
} from "../src/index.js";

const keys = [
  "main",
  "agent:main:main",
  "agent:main:discord:group:1234567890:thread:987654321",
  "agent:ops:telegram:work:dm:42",
  "cron:nightly",
  "agent:research:subagent:5b0c3f7e-2a51-4a43-8b8b-6b2c1f9c9d11",
  "Agent:Main:Signal:Group:AbCdEf+/=",
  "agent:main:slack:channel:c0123:thread:1710000000.123456",
];

const channels = ["discord", "telegram", "slack", "whatsapp", "signal"];
const policy: SendPolicyConfig = {
  default: "allow",
  rules: Array.from({ length: 50 }, (_, i) => ({
    match: {
      channel: channels[i % channels.length] as string,
      ...(i % 3 === 0 ? { chatType: "group" } : {}),
      ...(i % 4 === 0 ? { keyPrefix: `agent:agent${i}:` } : {}),
    },
    action: i % 7 === 0 ? "deny" : "allow",
  })),
};
const agentToAgent = createAgentToAgentPolicy({ enabled: true, allow: ["main", "ops*", "research"] });

let sink = 0;
let i = 0;
const next = (): string => keys[i++ % keys.length] as string;

const SMOKE = process.env.BENCH_SMOKE === "1";
// `throws`: a task that throws fails the bench, instead of a row of 0 ops/s.
const bench = new Bench({
  throws: true,
  warmup: true,
  ...(SMOKE ? { time: 20, warmupTime: 5 } : { time: 1500, warmupTime: 300 }),
});
bench
  .add("baseline: String#split + toLowerCase", () => {
    sink += next().toLowerCase().split(":").length;
  })
  .add("parseSessionKey", () => {
    sink += parseSessionKey(next())?.rest.length ?? 0;
  })
  .add("normalizeSessionKey", () => {
    sink += normalizeSessionKey(next())?.length ?? 0;
  })
  .add("resolveSendPolicy (50 rules)", () => {
    if (resolveSendPolicy({ policy, key: next() }) === "deny") sink++;
  })
  .add("checkSessionAccess (history, visibility all, cross-agent)", () => {
    const decision = checkSessionAccess({
      action: "history",
      requesterKey: "agent:main:main",
      targetKey: next(),
      visibility: "all",
      agentToAgent,
    });
    if (decision.allowed) sink++;
  });

await bench.run();

const targets: Record<string, number> = {
  parseSessionKey: 1_000_000,
  "resolveSendPolicy (50 rules)": 300_000,
};
const rows = bench.tasks.map((task) => {
  const result = task.result as { throughput?: { mean?: number }; latency?: { p50?: number } } | undefined;
  const opsPerSec = Math.round(result?.throughput?.mean ?? 0);
  const target = targets[task.name];
  return {
    task: task.name,
    "ops/s": opsPerSec.toLocaleString("en-US"),
    "p50 (ns)": Math.round((result?.latency?.p50 ?? 0) * 1e6),
    target: target === undefined ? "" : `≥ ${target.toLocaleString("en-US")}`,
    verdict: target === undefined ? "" : opsPerSec >= target ? "ok" : "BELOW TARGET",
  };
});
console.table(rows);
if (SMOKE) console.log("BENCH_SMOKE=1: smoke run, the figures are not comparable with the targets.");
if (sink === -1) console.log(sink);
