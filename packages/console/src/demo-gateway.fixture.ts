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
  systemClock,
} from "@sessions/gateway";
import { demoAgents, demoConfig, demoRoom, playDemoStory, waitForIdle } from "@sessions/testing/demo";
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

/** The `#held` room: each delivery first fails `fails` times (then counts down), then waits for `gate`. */
export interface HeldRoom {
  fails: number;
  gate: Gate;
}

function consoleChannel(posted: Posted[], flaky: { down: boolean }, held: HeldRoom): ChannelAdapterV1 {
  let threads = 0;
  return {
    specVersion: 1,
    channel: "console",
    capabilities: { threads: true },
    async deliver(target, message) {
      if (target.to === "#flaky" && flaky.down) throw new Error("the #flaky room is unreachable");
      if (target.to === "#held") {
        if (held.fails > 0) {
          held.fails--;
          throw new Error("the #held room is busy");
        }
        await held.gate.wait();
      }
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
  /** Deliveries to `#held` fail `held.fails` times, then wait for `held.gate.release()`: pending, retrying, delivered. */
  held: HeldRoom;
  /**
   * Stops serving, runs `whileDown`, and serves again on the same port: every client sees a dropped connection
   * and reconnects.
   */
  dropConnections(whileDown?: () => Promise<void>): Promise<void>;
  idle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real gateway on a SQLite file with the demo's story played (`DEMO_STORY` from `@sessions/testing/demo`: rooms,
 * a spawned researcher, an ops announce, a suppressed lobby announce, a watcher in a thread), plus a room last
 * active three hours ago and one whose deliveries fail, serving the built console on 127.0.0.1.
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
  const held: HeldRoom = { fails: 0, gate: gate() };
  // The gateway's clock runs `skew` ms off the real one: the seed plays one room three hours in the past.
  const skew = { ms: 0 };
  const gateway = createGateway({
    store: createSqliteStore({ path: join(dir, "sessions.db") }),
    clock: { ...systemClock, now: () => Date.now() + skew.ms },
    runner: createScriptedRunner({ agents: demoAgents({ streamPause: () => stream.wait() }) }),
    adapters: [consoleChannel(posted, flaky, held)],
    outbox: { baseDelayMs: 20, maxAttempts: 2 },
    config: demoConfig({ dmScope: options.dmScope ?? "main", maxPingPongTurns: 1 }),
  });
  const idle = () => waitForIdle(gateway);
  if (options.seed !== false) {
    await gateway.ready;
    // Before the story: #archive, last active three hours ago (for the activity filters).
    skew.ms = -3 * 3_600_000;
    await gateway.receive(demoRoom("archive", "anything new?"));
    await idle();
    skew.ms = 0;
    await playDemoStory(gateway);
    // After it: a room whose deliveries fail while `flaky.down` (the seed leaves one `failed` in the outbox).
    await gateway.receive(demoRoom("flaky", "anyone there?"));
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
    held,
    async dropConnections(whileDown) {
      await server.close({ reason: "test restart", restartExpectedMs: 200 });
      await whileDown?.();
      server = await gateway.listen({ ...listenOptions, port });
      fixture.server = server;
    },
    idle,
    async close() {
      stream.release();
      held.gate.release();
      await server.close();
      await gateway.close({ drainMs: 1000 });
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}
