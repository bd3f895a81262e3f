// 5. Cold start: a fresh gateway in a child process (cold-start.child.ts), from its first line of user code to
// listening, and its RSS.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createGatewayClient } from "../src/index.js";
import {
  COLD_STARTS,
  check,
  MB,
  median,
  ms,
  note,
  rows,
  since,
  stats,
  TARGET,
  TSX_LOADER,
  verdict,
} from "./harness.js";

const CHILD_SCRIPT = fileURLToPath(new URL("./cold-start.child.ts", import.meta.url));

interface ChildListening {
  type: "listening";
  url: string;
  firstLineMs: number;
  importMs: number;
  gatewayReadyMs: number;
  listenMs: number;
  readyMs: number;
  sinceProcessStartMs: number;
  rss: number;
}

interface ColdStart {
  child: ChildListening;
  spawnToReadyMs: number;
  rssAfterClientMb: number;
}

async function coldStart(dir: string, i: number): Promise<ColdStart> {
  const token = randomBytes(24).toString("hex");
  const dbPath = join(dir, `cold-${i}.db`);
  const t0 = performance.now();
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ["--import", TSX_LOADER, CHILD_SCRIPT, dbPath, token],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextLine = async (what: string): Promise<Record<string, unknown>> => {
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      lines.next(),
      exited.then((code) => ({ exited: code })),
      new Promise<{ timedOut: true }>((resolve) => {
        timer = setTimeout(() => resolve({ timedOut: true }), 30_000);
      }),
    ]);
    clearTimeout(timer);
    if ("value" in result && typeof result.value === "string")
      return JSON.parse(result.value) as Record<string, unknown>;
    throw new Error(`cold-start child: no ${what} line (${JSON.stringify(result)}): ${stderr.trim()}`);
  };
  try {
    const listening = (await nextLine("listening")) as unknown as ChildListening;
    const client = createGatewayClient({ url: listening.url, token, reconnect: false });
    await client.ready();
    const spawnToReadyMs = performance.now() - t0;
    check((await client.agents.list()).defaultId === "main", "the cold gateway answers");
    await client.close();
    child.stdin.write("stop\n");
    const stopping = await nextLine("stopping");
    const code = await exited;
    check(code === 0, `cold-start child exited ${code}: ${stderr.trim()}`);
    return { child: listening, spawnToReadyMs, rssAfterClientMb: Number(stopping.rss) / MB };
  } finally {
    if (child.exitCode === null) child.kill();
  }
}

export async function coldStartBench(dir: string): Promise<void> {
  const t = performance.now();
  await coldStart(dir, 0); // warm-up: the page cache and tsx's transform cache
  const runs: ColdStart[] = [];
  for (let i = 1; i <= COLD_STARTS; i++) runs.push(await coldStart(dir, i));
  note(`${COLD_STARTS} cold starts (+1 warm-up) in ${since(t)}`);
  const pick = (f: (r: ColdStart) => number) => stats(runs.map(f));
  const ready = pick((r) => r.child.readyMs);
  const rssListening = pick((r) => r.child.rss / MB);
  const rssAfter = pick((r) => r.rssAfterClientMb);
  const maxRss = Math.max(rssListening.max, rssAfter.max);
  rows.push({
    task: `cold start: child's first line → listening (max of ${COLD_STARTS} in p95 column)`,
    p50: ms(ready.p50),
    "p95 / total": ms(ready.max),
    target: `≤ ${TARGET.coldReadyMs} ms`,
    verdict: verdict(ready.p50 <= TARGET.coldReadyMs),
  });
  for (const [task, s] of [
    ["  import @sessions/gateway (core, zod, ws, better-sqlite3)", pick((r) => r.child.importMs)],
    ["  createGateway + ready on a fresh SQLite file", pick((r) => r.child.gatewayReadyMs)],
    ["  gateway.listen", pick((r) => r.child.listenMs)],
    ["  process start → first line (Node + tsx; informational)", pick((r) => r.child.firstLineMs)],
    ["cold start: parent spawn → client ready() (informational)", pick((r) => r.spawnToReadyMs)],
  ] as const) {
    rows.push({ task, p50: ms(s.p50), "p95 / total": ms(s.max), target: "", verdict: "" });
  }
  rows.push({
    task: "cold start: RSS at listening / after serving a client",
    p50: `${rssListening.p50.toFixed(0)} / ${rssAfter.p50.toFixed(0)} MB`,
    "p95 / total": `max ${maxRss.toFixed(0)} MB`,
    target: `≤ ${TARGET.coldRssMb} MB`,
    verdict: verdict(maxRss <= TARGET.coldRssMb),
  });
  note(
    `child process start → listening p50 ${ms(median(runs.map((r) => r.child.sinceProcessStartMs)))}` +
      " (includes Node and tsx startup); the child's RSS includes tsx's loader",
  );
}
