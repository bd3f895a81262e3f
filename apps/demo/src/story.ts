import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { consoleAssetsDir } from "@sessions/console";
import {
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type Gateway,
  type GatewayRow,
} from "@sessions/gateway";
import { demoAgents } from "./agents.js";
import { createConsoleChannel } from "./console-channel.js";
import { paint } from "./paint.js";

export interface StoryResult {
  deliveries: { to: string; threadId?: string; kind: string; text: string }[];
  suppressed: { sessionKey: string; reason: string }[];
  sessions: GatewayRow[];
}

export interface StoryOptions {
  /**
   * After the story, keep the gateway running with the console at `http://127.0.0.1:<port>/` (port 0: any free
   * one) until `until` resolves; `onConsole` hears the address.
   */
  serve?: {
    port?: number | undefined;
    until: Promise<void>;
    onConsole?: ((url: string) => void) | undefined;
  };
}

const alice = (text: string) => ({
  channel: "console",
  chatType: "direct" as const,
  peerId: "alice",
  senderId: "alice",
  senderName: "Alice",
  isOwner: true,
  to: "@alice",
  text,
});
const room = (peerId: string, text: string) => ({
  channel: "console",
  chatType: "group" as const,
  peerId,
  senderId: "sam",
  senderName: "Sam",
  to: `#${peerId}`,
  text,
  agentId: "ops",
  displayName: `#${peerId}`,
});

async function until(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`demo: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function idle(gateway: Gateway): Promise<void> {
  await until(async () => {
    const queued = await gateway.store.listQueuedDeliveries(1);
    const busy = await gateway.store.listRunsByStatus(["queued", "running"]);
    const children = await gateway.store.listSubagents({ statuses: ["running", "announcing"] });
    return queued.length === 0 && busy.length === 0 && children.length === 0;
  }, "the gateway to go idle");
}

/** Plays the demo story on a fresh SQLite file; `print` receives every line. */
export async function playStory(
  print: (line: string) => void = console.log,
  options: StoryOptions = {},
): Promise<StoryResult> {
  const dir = mkdtempSync(join(tmpdir(), "sessions-demo-"));
  const dbPath = join(dir, "sessions.db");
  const channel = createConsoleChannel(print);
  const gateway = createGateway({
    store: createSqliteStore({ path: dbPath }),
    runner: createScriptedRunner({
      agents: demoAgents((from, to, text) =>
        print(`   ${paint.magenta("↔")} ping-pong ${from} → ${to}: ${text}`),
      ),
    }),
    adapters: [channel],
    config: {
      session: {
        agentToAgent: { maxPingPongTurns: 2 },
        sendPolicy: {
          rules: [
            { match: { channel: "console", keyPrefix: "agent:ops:console:group:lobby" }, action: "deny" },
          ],
        },
      },
      tools: {
        sessions: { visibility: "all" },
        agentToAgent: { enabled: true, allow: ["main", "ops", "research"] },
      },
      agents: {
        list: [
          { id: "main", name: "Main assistant", subagents: { allowAgents: ["research"] } },
          { id: "research", name: "Researcher" },
          { id: "ops", name: "Ops bot" },
        ],
      },
    },
  });
  const unsubscribe = gateway.subscribe((event) => {
    if (event.type === "agent" && event.stream === "tool") {
      const data = event.data as { type: string; toolName: string; params?: unknown };
      if (data.type === "tool-call")
        print(
          `   ${paint.yellow("⚙")} ${paint.bold(data.toolName)} ${paint.dim(JSON.stringify(data.params))}`,
        );
    }
    if (
      event.type === "delivery" &&
      event.record.status === "suppressed" &&
      event.record.kind !== "announce"
    ) {
      print(`   ${paint.red("⊘")} delivery to ${event.record.to} suppressed: ${event.record.lastError}`);
    }
  });
  const step = (n: number, title: string) => print(`\n${paint.cyan(paint.bold(`▶ ${n}. ${title}`))}`);
  const say = (who: string, text: string) => print(`   ${paint.blue("⇠")} ${paint.bold(who)}: ${text}`);

  try {
    await gateway.ready;
    print(paint.bold("sessions demo") + paint.dim(` — embedded gateway on ${dbPath}`));

    step(1, "The ops room comes online (agent ops)");
    say("Sam in #ops", "morning, ops bot");
    await gateway.receive(room("ops", "morning, ops bot"));
    say("Sam in #lobby", "hello lobby");
    await gateway.receive(room("lobby", "hello lobby"));
    await idle(gateway);

    step(2, "Alice asks the main assistant to research → sessions_spawn, then the sub-agent announces back");
    say("Alice", "research how agents coordinate across chats");
    await gateway.receive(alice("research how agents coordinate across chats"));
    await idle(gateway);

    step(3, "Alice asks what sessions exist → sessions_list");
    say("Alice", "list sessions");
    await gateway.receive(alice("list sessions"));
    await idle(gateway);

    step(4, "Alice asks what research found → sessions_history on the sub-agent");
    say("Alice", "what did research find?");
    await gateway.receive(alice("what did research find?"));
    await idle(gateway);

    step(5, "Alice has main message the ops room → sessions_send, a ping-pong, and the announce in #ops");
    say("Alice", "tell ops schedule the v2 deploy");
    await gateway.receive(alice("tell ops schedule the v2 deploy"));
    await idle(gateway);

    step(6, "The same to #lobby hits the send policy: the run happens, the announce is suppressed");
    say("Alice", "tell lobby schedule the v2 deploy");
    await gateway.receive(alice("tell lobby schedule the v2 deploy"));
    await idle(gateway);
    const suppressed = (await gateway.deliveries.list({ status: "suppressed" })).deliveries
      .filter(
        (d) => d.kind === "announce" && d.sessionKey.includes("lobby") && d.lastError !== "ANNOUNCE_SKIP",
      )
      .map((d) => ({ sessionKey: d.sessionKey, reason: d.lastError ?? "" }));
    for (const s of suppressed)
      print(`   ${paint.red("⊘")} announce for ${s.sessionKey} suppressed: ${s.reason}`);

    step(7, "The session tree");
    const { sessions } = await gateway.sessions.list({ limit: 100 });
    const children = new Map<string, GatewayRow[]>();
    for (const s of sessions)
      if (s.spawnedBy) children.set(s.spawnedBy, [...(children.get(s.spawnedBy) ?? []), s]);
    for (const root of sessions.filter((s) => !s.spawnedBy)) {
      print(`   ${paint.bold(root.key)} ${paint.dim(`(${root.kind}, ${root.channel ?? "internal"})`)}`);
      const kids = children.get(root.key) ?? [];
      for (const [i, kid] of kids.entries()) {
        print(`   ${i === kids.length - 1 ? "└─" : "├─"} ${kid.key} ${paint.dim(`"${kid.label ?? ""}"`)}`);
      }
    }
    print(
      `\n${paint.green("✔")} demo finished: ${channel.sent.length} messages delivered, ${suppressed.length} suppressed by policy, ${sessions.length} sessions.`,
    );
    const result = { deliveries: channel.sent, suppressed, sessions };
    if (options.serve === undefined) {
      print(paint.dim("  See these sessions in the browser console: npm run demo -- --serve"));
      return result;
    }
    const server = await gateway.listen({
      port: options.serve.port ?? 0,
      http: { static: consoleAssetsDir() },
    });
    const url = `http://127.0.0.1:${server.port}/`;
    print(
      `\n${paint.bold("console")}  ${url}   ${paint.dim("(log in with an empty token; web chat at /chat)")}`,
    );
    print(paint.dim("  The gateway keeps running for the console; Ctrl-C stops it."));
    options.serve.onConsole?.(url);
    await options.serve.until;
    await server.close({ reason: "demo stopping" });
    return result;
  } finally {
    unsubscribe();
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
