/**
 * A local cluster: a real Postgres (embedded, or $DATABASE_URL) and three `sessions-gateway serve --store
 * postgres://…` processes. It shows a request sent to one gateway answered through another, then a `kill -9`
 * of the gateway running a slow run, and what the others make of it. `--keep` leaves the cluster running.
 *
 *   pnpm cluster            (from the repository root: builds what it needs first)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { startLocalPostgres } from "../src/testing/local-postgres.js";

const here = dirname(fileURLToPath(import.meta.url));
const cli = resolve(here, "../../../apps/gateway/bin.js");
const keep = process.argv.includes("--keep");
const say = (line: string) => process.stdout.write(`${line}\n`);
const t0 = Date.now();
const at = () => `+${((Date.now() - t0) / 1000).toFixed(1)}s`;

// A runner each gateway loads with --runner: it answers with its gateway's name; `slow …` takes 5 seconds.
const work = mkdtempSync(join(tmpdir(), "sessions-cluster-"));
const runnerFile = join(work, "runner.mjs");
writeFileSync(
  runnerFile,
  `const text = (m) => typeof m.content === "string" ? m.content : m.content.map((p) => p.text ?? "").join("");
export default {
  async run(request) {
    const input = text(request.input);
    if (input.startsWith("slow")) await new Promise((r) => setTimeout(r, 5000));
    return { reply: \`answered by \${process.env.GATEWAY_NAME}: \${input}\` };
  },
};
`,
);

interface Node {
  name: string;
  child: ChildProcess;
  url: string;
  client: GatewayClient;
}

function serve(name: string, store: string): Promise<Node> {
  return new Promise((resolveNode, reject) => {
    const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--runner", runnerFile], {
      env: { ...process.env, SESSIONS_GATEWAY_STORE: store, GATEWAY_NAME: name, SESSIONS_GATEWAY_TOKEN: "" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout?.on("data", (chunk) => {
      out += String(chunk);
      const match = /listening (ws:\/\/\S+)/.exec(out);
      if (match && !out.includes("\u0000seen")) {
        out += "\u0000seen";
        const url = match[1] as string;
        const client = createGatewayClient({ url, reconnect: false });
        client.ready().then(() => resolveNode({ name, child, url, client }), reject);
      }
    });
    child.on("exit", (code, signal) => {
      if (!out.includes("listening"))
        reject(new Error(`${name} exited (${code ?? signal}) before listening`));
    });
  });
}

const postgres = await startLocalPostgres();
const nodes: Node[] = [];
async function shutdown(): Promise<void> {
  for (const node of nodes) {
    await node.client.close().catch(() => undefined);
    if (node.child.exitCode === null && node.child.signalCode === null) {
      node.child.kill("SIGTERM");
      await new Promise((r) => node.child.once("exit", r));
    }
  }
  await postgres.stop();
  rmSync(work, { recursive: true, force: true });
}

try {
  const store = await postgres.createDatabase("sessions_cluster");
  say(`${at()} Postgres ready at ${store.replace(/:[^:@/]*@/, ":***@")}`);
  nodes.push(...(await Promise.all(["g1", "g2", "g3"].map((name) => serve(name, store)))));
  for (const node of nodes) say(`${at()} ${node.name} listening ${node.url} (pid ${node.child.pid})`);
  const [g1, g2, g3] = nodes as [Node, Node, Node];

  say("\n1. One request, three gateways");
  const sent = (await g1.client.request("chat.send", {
    sessionKey: "main",
    message: "hello cluster",
    idempotencyKey: `hello-${Date.now()}`,
  })) as { runId: string };
  say(`${at()} chat.send through g1 → run ${sent.runId}`);
  const waited = (await g2.client.request("agent.wait", { runId: sent.runId, timeoutMs: 10_000 })) as {
    status: string;
    reply?: string;
  };
  say(`${at()} agent.wait through g2 → ${waited.status}: "${waited.reply}"`);
  const history = (await g3.client.request("chat.history", { sessionKey: "main", limit: 10 })) as {
    messages: { role: string; content: unknown }[];
  };
  say(`${at()} chat.history through g3 → ${history.messages.length} messages`);

  say("\n2. kill -9 during a run");
  const slow = (await g2.client.request("agent", {
    sessionKey: "ops",
    message: "slow report",
    idempotencyKey: `slow-${Date.now()}`,
  })) as { runId: string };
  say(`${at()} agent "slow report" through g2 → run ${slow.runId} (takes 5 s on g2)`);
  const outcome = g1.client.request("agent.wait", { runId: slow.runId, timeoutMs: 30_000 }) as Promise<{
    status: string;
    error?: string;
  }>;
  await new Promise((r) => setTimeout(r, 1000));
  g2.child.kill("SIGKILL");
  const killedAt = Date.now();
  say(`${at()} kill -9 ${g2.child.pid} (g2)`);
  const ended = await outcome;
  say(
    `${at()} agent.wait through g1 → ${ended.status}: "${ended.error}" (${Date.now() - killedAt} ms after the kill)`,
  );
  const again = (await g3.client.request("agent", {
    sessionKey: "ops",
    message: "report again",
    idempotencyKey: `again-${Date.now()}`,
  })) as { runId: string };
  const answer = (await g1.client.request("agent.wait", { runId: again.runId, timeoutMs: 10_000 })) as {
    status: string;
    reply?: string;
  };
  say(`${at()} the same session through g3 → ${answer.status}: "${answer.reply}"`);

  if (keep) {
    say(`\nThe cluster keeps running (g1, g3 and Postgres); Ctrl-C stops it. Try:`);
    say(`  node apps/gateway/bin.js sessions history ops --url ${g1.url}`);
    await new Promise<void>((r) => process.once("SIGINT", () => r()));
  }
} finally {
  await shutdown();
}
