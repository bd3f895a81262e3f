import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ChannelAdapterV1,
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type Gateway,
  type GatewayServer,
  type GatewayToken,
  type ScriptedAgent,
} from "@sessions/gateway";
import { consoleAssetsDir } from "./index.js";

/** What the fake chat platform (the outside world) was asked to post. */
export interface Posted {
  to: string;
  threadId?: string | undefined;
  kind: string;
  text: string;
}

/** A held step of a scripted agent, released by the test: streaming is observable without timing. */
export interface Gate {
  wait(): Promise<void>;
  release(): void;
}

function gate(): Gate {
  let open: () => void = () => {};
  let promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    wait: () => promise,
    release() {
      open();
      promise = new Promise<void>((resolve) => {
        open = resolve;
      });
    },
  };
}

/** The demo's agents (apps/demo), plus a held stream and a long run to abort. */
function agents(stream: Gate): Record<string, ScriptedAgent> {
  const main: ScriptedAgent = async (turn) => {
    if (turn.kind === "ping_pong") return "REPLY_SKIP";
    const text = turn.text.trim();
    if (text.startsWith("research ")) {
      await turn.callTool("sessions_spawn", {
        task: `Research: ${text.slice("research ".length)}`,
        agentId: "research",
        label: "research",
      });
      return "I asked a research sub-agent to look into it; it will report back here.";
    }
    if (text.startsWith("watch ")) {
      await turn.callTool("sessions_spawn", {
        task: `Watch: ${text.slice("watch ".length)}`,
        agentId: "research",
        label: "watcher",
        thread: true,
      });
      return "A watcher is on it, in its own thread.";
    }
    if (text.startsWith("tell ")) {
      const [, room, ...rest] = text.split(" ");
      const sent = await turn.callTool<{
        status: string;
        reply?: string | undefined;
        error?: string | undefined;
      }>("sessions_send", {
        sessionKey: `agent:ops:console:group:${room}`,
        message: rest.join(" "),
        timeoutSeconds: 10,
      });
      return sent.status === "ok" ? `Ops replied: "${sent.reply}"` : `Could not reach ${room}: ${sent.error}`;
    }
    if (text === "stream please") {
      turn.say("Streaming the first words");
      await stream.wait();
      turn.say(", then the rest.");
      return "Streaming the first words, then the rest.";
    }
    if (text.startsWith("slow")) {
      turn.say("Working on it…");
      await turn.sleep(10 * 60_000);
      return "done";
    }
    return `You said: ${text}`;
  };
  const research: ScriptedAgent = (turn) => {
    if (turn.kind === "subagent")
      return "Result:\nSession keys scope every conversation.\nNotes:\n- 3 sources read";
    if (turn.kind === "subagent_announce")
      return "Result:\n- Every chat is a session with a stable key.\nNotes:\n- 3 sources read";
    return "REPLY_SKIP";
  };
  const ops: ScriptedAgent = (turn) => {
    if (turn.kind === "inter_session") return "Deploy of v2 is scheduled for 14:00 UTC.";
    if (turn.kind === "ping_pong") return "REPLY_SKIP";
    if (turn.kind === "announce")
      return "Deploy v2 scheduled for 14:00 UTC (requested by the main assistant).";
    return `Ops bot here. You said: ${turn.text}`;
  };
  return { main, research, ops };
}

function consoleChannel(posted: Posted[], flaky: { down: boolean }): ChannelAdapterV1 {
  let threads = 0;
  return {
    specVersion: 1,
    channel: "console",
    capabilities: { threads: true },
    async deliver(target, message) {
      if (target.to === "#flaky" && flaky.down) throw new Error("the #flaky room is unreachable");
      posted.push({
        to: target.to,
        ...(target.threadId ? { threadId: target.threadId } : {}),
        kind: message.kind,
        text: message.text,
      });
      return { messageIds: [`console-${posted.length}`] };
    },
    async createThread() {
      threads++;
      return { threadId: String(threads) };
    },
  };
}

export interface DemoGateway {
  gateway: Gateway;
  server: GatewayServer;
  /** The console's address (`http://127.0.0.1:<port>/`). */
  url: string;
  posted: Posted[];
  stream: Gate;
  /** Deliveries to `#flaky` fail while this is true (the seed leaves one `failed`). */
  flaky: { down: boolean };
  /**
   * Stops serving, runs `whileDown`, and serves again on the same port: every client sees a dropped connection
   * and reconnects.
   */
  dropConnections(whileDown?: () => Promise<void>): Promise<void>;
  idle(): Promise<void>;
  close(): Promise<void>;
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

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A real gateway on a SQLite file with the demo's story played (rooms, a spawned researcher, an ops announce, a
 * suppressed lobby announce), serving the built console on 127.0.0.1.
 */
export async function startDemoGateway(
  options: {
    tokens?: GatewayToken[] | undefined;
    dmScope?: "main" | "per-peer" | "per-channel-peer" | undefined;
    seed?: boolean | undefined;
  } = {},
): Promise<DemoGateway> {
  const dir = mkdtempSync(join(tmpdir(), "sessions-console-"));
  const posted: Posted[] = [];
  const stream = gate();
  const flaky = { down: true };
  const gateway = createGateway({
    store: createSqliteStore({ path: join(dir, "sessions.db") }),
    runner: createScriptedRunner({ agents: agents(stream) }),
    adapters: [consoleChannel(posted, flaky)],
    outbox: { baseDelayMs: 20, maxAttempts: 2 },
    config: {
      session: {
        dmScope: options.dmScope ?? "main",
        agentToAgent: { maxPingPongTurns: 1 },
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
  const idle = () =>
    until(async () => {
      const queued = await gateway.store.listQueuedDeliveries(1);
      const busy = await gateway.store.listRunsByStatus(["queued", "running"]);
      const children = await gateway.store.listSubagents({ statuses: ["running", "announcing"] });
      return queued.length === 0 && busy.length === 0 && children.length === 0;
    }, "the gateway to go idle");
  if (options.seed !== false) {
    await gateway.ready;
    await gateway.receive(room("ops", "morning, ops bot"));
    await gateway.receive(room("lobby", "hello lobby"));
    await idle();
    await gateway.receive(alice("research how agents coordinate across chats"));
    await idle();
    await gateway.receive(alice("tell ops schedule the v2 deploy"));
    await idle();
    await gateway.receive(alice("tell lobby schedule the v2 deploy"));
    await idle();
    await gateway.receive(room("flaky", "anyone there?"));
    await idle();
    await gateway.receive(alice("watch the deploy"));
    await idle();
  }
  const listenOptions = {
    http: { static: consoleAssetsDir() },
    ...(options.tokens ? { auth: { tokens: options.tokens } } : {}),
  };
  let server = await gateway.listen(listenOptions);
  const port = server.port;
  const fixture: DemoGateway = {
    gateway,
    server,
    url: `http://127.0.0.1:${port}/`,
    posted,
    stream,
    flaky,
    async dropConnections(whileDown) {
      await server.close({ reason: "test restart", restartExpectedMs: 200 });
      await whileDown?.();
      server = await gateway.listen({ ...listenOptions, port });
      fixture.server = server;
    },
    idle,
    async close() {
      stream.release();
      await server.close();
      await gateway.close({ drainMs: 1000 });
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}
