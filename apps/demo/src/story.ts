import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { consoleAssetsDir } from "@sessions/console";
import { createGateway, createScriptedRunner, createSqliteStore, type GatewayRow } from "@sessions/gateway";
import { DEMO_STORY, demoAgents, demoConfig, playDemoStory } from "@sessions/testing/demo";
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
      agents: demoAgents({
        onPingPong: (from, to, text) => print(`   ${paint.magenta("↔")} ping-pong ${from} → ${to}: ${text}`),
      }),
    }),
    adapters: [channel],
    config: demoConfig(),
  });
  const unsubscribe = gateway.subscribe((event) => {
    if (event.type === "agent" && event.stream === "tool") {
      const data = event.data as { type: string; toolName: string; params?: unknown };
      if (data.type === "tool-call")
        print(
          `   ${paint.yellow("⚙")} ${paint.bold(data.toolName)} ${paint.dim(JSON.stringify(data.params))}`,
        );
    }
    // A suppressed delivery is news, unless an agent chose to stay silent or had nowhere to post.
    if (
      event.type === "delivery" &&
      event.record.status === "suppressed" &&
      event.record.lastError !== "ANNOUNCE_SKIP" &&
      event.record.lastError !== "target session has no delivery context"
    ) {
      const { kind, sessionKey, lastError } = event.record;
      print(`   ${paint.red("⊘")} ${kind} for ${sessionKey} suppressed: ${lastError}`);
    }
  });
  const step = (n: number, title: string) => print(`\n${paint.cyan(paint.bold(`▶ ${n}. ${title}`))}`);
  const say = (who: string, text: string) => print(`   ${paint.blue("⇠")} ${paint.bold(who)}: ${text}`);

  try {
    await gateway.ready;
    print(paint.bold("sessions demo") + paint.dim(` — embedded gateway on ${dbPath}`));

    await playDemoStory(gateway, {
      onStep: (index, { title }) => step(index + 1, title),
      onMessage: (who, message) => say(who, message.text),
    });
    const suppressed = (await gateway.deliveries.list({ status: "suppressed" })).deliveries
      .filter(
        (d) => d.kind === "announce" && d.sessionKey.includes("lobby") && d.lastError !== "ANNOUNCE_SKIP",
      )
      .map((d) => ({ sessionKey: d.sessionKey, reason: d.lastError ?? "" }));

    step(DEMO_STORY.length + 1, "The session tree");
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
