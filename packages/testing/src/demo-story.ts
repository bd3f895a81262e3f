import type { InboundMessage, SessionsConfigInput } from "@sessions/core";
import { EVENTUALLY_TIMEOUT_MS, eventually } from "./eventually.js";

/**
 * The sessions demo's world, shared by `npm run demo` and the console's browser tests: three scripted agents
 * (`main`, `research`, `ops`), the people who write to them on a chat platform called `console`, the gateway
 * config that lets them talk, and the story they play.
 */

/** The chat platform the demo's people write on (the demo's stand-in for Discord or Telegram). */
export const DEMO_CHANNEL = "console";

/** Alice, the owner, in a direct chat with the main assistant. */
export function demoAlice(text: string): InboundMessage {
  return {
    channel: DEMO_CHANNEL,
    chatType: "direct",
    peerId: "alice",
    senderId: "alice",
    senderName: "Alice",
    isOwner: true,
    to: "@alice",
    text,
  };
}

/** Sam in the group room `#<room>`, which the `ops` agent answers. */
export function demoRoom(room: string, text: string): InboundMessage {
  return {
    channel: DEMO_CHANNEL,
    chatType: "group",
    peerId: room,
    senderId: "sam",
    senderName: "Sam",
    to: `#${room}`,
    text,
    agentId: "ops",
    displayName: `#${room}`,
  };
}

/**
 * The demo's gateway config: agents `main` (may spawn `research`), `research` and `ops`; visibility `all` and
 * agent-to-agent between the three; the `#lobby` room denied by a send-policy rule.
 */
export function demoConfig(
  options: {
    dmScope?: "main" | "per-peer" | "per-channel-peer" | "per-account-channel-peer" | undefined;
    maxPingPongTurns?: number | undefined;
  } = {},
): SessionsConfigInput {
  return {
    session: {
      ...(options.dmScope ? { dmScope: options.dmScope } : {}),
      agentToAgent: { maxPingPongTurns: options.maxPingPongTurns ?? 2 },
      sendPolicy: {
        rules: [
          { match: { channel: DEMO_CHANNEL, keyPrefix: "agent:ops:console:group:lobby" }, action: "deny" },
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
  };
}

/** Hooks into the demo's agents. */
export interface DemoAgentOptions {
  /** Hears each ping-pong reply between `main` and `ops`. */
  onPingPong?: ((from: string, to: string, text: string) => void) | undefined;
  /**
   * What `stream please` waits on between its two streamed halves (default: half a second), so a test can hold a
   * reply mid-stream.
   */
  streamPause?: (() => Promise<void>) | undefined;
  /** How long the research sub-agent "reads" before answering (default 150 ms). */
  researchMs?: number | undefined;
}

type Row = { key: string; kind: string; channel: string; label?: string };

/**
 * What a demo agent uses of its turn: the part of `@sessions/gateway`'s `ScriptedTurn` it needs, so a
 * `DemoAgent` is a `ScriptedAgent` for `createScriptedRunner`.
 */
export interface DemoTurn {
  /** What started the run: `chat` (a chat message), `agent`, `inter_session`, `subagent`, `announce`, … */
  kind: string;
  /** The text of the message that started the run. */
  text: string;
  /** Calls a tool the gateway gave this run (`sessions_spawn`, `sessions_list`, …), recorded in the transcript. */
  callTool<T = Record<string, unknown>>(name: string, params?: unknown): Promise<T>;
  /** Streams a text delta of the reply. */
  say(text: string): void;
  /** Waits on the gateway clock; rejects when the run is aborted. */
  sleep(ms: number): Promise<void>;
}

/** A demo agent: a plain function of its turn (pass it to `createScriptedRunner({ agents })`). */
export type DemoAgent = (turn: DemoTurn) => string | Promise<string>;

/**
 * The demo's agents: plain, deterministic functions of their turn that call real tools. `main` understands
 * `research <topic>` (spawns a researcher), `watch <topic>` (spawns one in its own thread), `list sessions`,
 * `what did research find?`, `tell <room> <message>` (sessions_send to `#<room>`), `nag <room> <message>` (the same
 * send three times: the loop guard refuses the last), `stream please` (a reply in two
 * streamed halves) and `slow …` (a run that waits ten minutes: something to abort); anything else is echoed.
 */
export function demoAgents(options: DemoAgentOptions = {}): Record<string, DemoAgent> {
  const note = options.onPingPong ?? (() => {});
  let researchChild: string | undefined;
  let mainPingPongs = 0;
  let opsPingPongs = 0;

  const main: DemoAgent = async (turn) => {
    if (turn.kind === "ping_pong") {
      mainPingPongs++;
      const reply =
        mainPingPongs === 1 ? "Thanks! Please post the schedule in #ops when it is locked." : "REPLY_SKIP";
      note("main", "ops", reply);
      return reply;
    }
    if (turn.kind === "announce") return "Noted (main assistant).";
    const text = turn.text.trim();
    if (text.startsWith("research ") || text.startsWith("watch ")) {
      const watch = text.startsWith("watch ");
      const topic = text.slice(text.indexOf(" ") + 1);
      const result = await turn.callTool<{ childSessionKey: string }>("sessions_spawn", {
        task: `${watch ? "Watch" : "Research"}: ${topic}`,
        agentId: "research",
        label: watch ? "watcher" : "research",
        ...(watch ? { thread: true } : {}),
      });
      if (watch) return "A watcher is on it, in its own thread.";
      researchChild = result.childSessionKey;
      return "I asked a research sub-agent to look into it; it will report back here.";
    }
    if (text === "list sessions") {
      const list = await turn.callTool<{ count: number; sessions: Row[] }>("sessions_list", { limit: 20 });
      const lines = list.sessions.map(
        (s) => `• ${s.key} (${s.kind}, ${s.channel}${s.label ? `, "${s.label}"` : ""})`,
      );
      return `I can see ${list.count} sessions:\n${lines.join("\n")}`;
    }
    if (text === "what did research find?" && researchChild !== undefined) {
      const history = await turn.callTool<{ messages: { role: string; content: unknown }[] }>(
        "sessions_history",
        { sessionKey: researchChild, limit: 10 },
      );
      const last = [...history.messages].reverse().find((m) => m.role === "assistant");
      return `The research session has ${history.messages.length} messages. Its last answer:\n${String(last?.content ?? "(nothing yet)")}`;
    }
    if (text.startsWith("tell ")) {
      const [, room, ...rest] = text.split(" ");
      const sent = await turn.callTool<{ status: string; reply?: string; error?: string }>("sessions_send", {
        sessionKey: `agent:ops:console:group:${room}`,
        message: rest.join(" "),
        timeoutSeconds: 60,
      });
      return sent.status === "ok" ? `Ops replied: "${sent.reply}"` : `Could not reach ${room}: ${sent.error}`;
    }
    if (text.startsWith("nag ")) {
      // The same message to a room three times in one run: the tree's loop guard refuses what a send and its
      // reply-back turns could not account for.
      const [, room, ...rest] = text.split(" ");
      const codes: string[] = [];
      for (let i = 0; i < 3; i++) {
        const sent = await turn.callTool<{ status: string; code?: string }>("sessions_send", {
          sessionKey: `agent:ops:console:group:${room}`,
          message: rest.join(" "),
          timeoutSeconds: 0,
        });
        codes.push(sent.code ?? sent.status);
      }
      return `Sent: ${codes.join(", ")}`;
    }
    if (text === "stream please") {
      turn.say("Streaming the first words");
      await (options.streamPause ? options.streamPause() : turn.sleep(500));
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

  const research: DemoAgent = async (turn) => {
    if (turn.kind === "subagent") {
      turn.say("Reading sources…");
      await turn.sleep(options.researchMs ?? 150);
      return "Result:\nSession keys scope every conversation; visibility decides who sees what.\nNotes:\n- 3 sources read";
    }
    if (turn.kind === "subagent_announce") {
      return [
        "Result:",
        "- Every chat is a session with a stable key (agent:<id>:<channel>:group:<id>).",
        "- sessions_send carries provenance, so agents never mistake each other for users.",
        "- Sub-agents report back with a normalised Status/Result/Notes announce.",
        "Notes:",
        "- 3 sources read",
      ].join("\n");
    }
    return "REPLY_SKIP";
  };

  const ops: DemoAgent = (turn) => {
    if (turn.kind === "inter_session") return "Deploy of v2 is scheduled for 14:00 UTC.";
    if (turn.kind === "ping_pong") {
      opsPingPongs++;
      const reply = opsPingPongs === 1 ? "Will do — posting it in #ops now." : "REPLY_SKIP";
      note("ops", "main", reply);
      return reply;
    }
    if (turn.kind === "announce")
      return "📦 Deploy v2 scheduled for 14:00 UTC (requested by the main assistant).";
    return `Ops bot here. You said: ${turn.text}`;
  };

  return { main, research, ops };
}

/** One step of the demo story: what happens, and who writes what. */
export interface DemoStep {
  title: string;
  messages: { who: string; message: InboundMessage }[];
}

const say = (who: string, message: InboundMessage) => ({ who, message });

/** The demo story, step by step. Play it with `playDemoStory`. */
export const DEMO_STORY: readonly DemoStep[] = [
  {
    title: "The ops room comes online (agent ops)",
    messages: [
      say("Sam in #ops", demoRoom("ops", "morning, ops bot")),
      say("Sam in #lobby", demoRoom("lobby", "hello lobby")),
    ],
  },
  {
    title: "Alice asks the main assistant to research → sessions_spawn, then the sub-agent announces back",
    messages: [say("Alice", demoAlice("research how agents coordinate across chats"))],
  },
  {
    title: "Alice asks what sessions exist → sessions_list",
    messages: [say("Alice", demoAlice("list sessions"))],
  },
  {
    title: "Alice asks what research found → sessions_history on the sub-agent",
    messages: [say("Alice", demoAlice("what did research find?"))],
  },
  {
    title: "Alice has main message the ops room → sessions_send, a ping-pong, and the announce in #ops",
    messages: [say("Alice", demoAlice("tell ops schedule the v2 deploy"))],
  },
  {
    title: "The same to #lobby hits the send policy: the run happens, the announce is suppressed",
    messages: [say("Alice", demoAlice("tell lobby schedule the v2 deploy"))],
  },
  {
    title: "Alice asks for a watcher in its own thread → sessions_spawn with thread: true, a thread binding",
    messages: [say("Alice", demoAlice("watch the deploy"))],
  },
];

/**
 * The part of a `@sessions/gateway` gateway the story needs: `receive`, and the store's queries that tell when
 * nothing is left to do (see `waitForIdle`).
 */
export interface DemoStoryGateway {
  /** Hands the gateway one inbound chat message (`gateway.receive`). */
  receive(message: InboundMessage): Promise<unknown>;
  /** The gateway's store, read to tell when nothing is left to do. */
  store: {
    /** Deliveries still waiting in the outbox, at most `limit`. */
    listQueuedDeliveries(limit: number): Promise<readonly unknown[]>;
    /** Runs in one of these states. */
    listRunsByStatus(statuses: ("queued" | "running")[]): Promise<readonly unknown[]>;
    /** Sub-agents in one of these states. */
    listSubagents(filter: { statuses: ("running" | "announcing")[] }): Promise<readonly unknown[]>;
    /**
     * `sessions_send` runs whose agent-to-agent follow-up (reply-back turns, announce) is not yet recorded. A
     * `@sessions/gateway` store has it; without it, `waitForIdle` cannot see the moment between such a run's end and
     * its first reply-back run, and may return there.
     */
    listPendingFollowUps?(): Promise<readonly unknown[]>;
  };
}

/**
 * Waits until the gateway has nothing left to do, read from what its store says is still due (never from a quiet
 * moment): no run queued or running, no sub-agent running or announcing (one is `running` from its spawn until its
 * announce is posted), no `sessions_send` run whose follow-up is pending (its end is written before its reply-back
 * runs, and it is marked done only after they and the announce are recorded), and no delivery queued in the outbox.
 * Each of these is recorded before the one before it is cleared, so there is no gap between steps where the gateway
 * only looks idle. Rejects after `timeoutMs` (default 60 s: a bound for a gateway that never settles, not a
 * budget), naming what was still due.
 */
export async function waitForIdle(
  gateway: DemoStoryGateway,
  timeoutMs = EVENTUALLY_TIMEOUT_MS,
): Promise<void> {
  let state = "";
  await eventually(
    async () => {
      const queued = await gateway.store.listQueuedDeliveries(1);
      const busy = await gateway.store.listRunsByStatus(["queued", "running"]);
      const children = await gateway.store.listSubagents({ statuses: ["running", "announcing"] });
      const followUps = (await gateway.store.listPendingFollowUps?.()) ?? [];
      state = `${busy.length} run(s) queued or running, ${children.length} sub-agent(s) busy, ${followUps.length} follow-up(s) pending, ${queued.length > 0 ? "deliveries" : "no delivery"} queued`;
      return queued.length === 0 && busy.length === 0 && children.length === 0 && followUps.length === 0;
    },
    () => `demo: the gateway having nothing left to do (${state})`,
    { timeoutMs, intervalMs: 10 },
  );
}

/**
 * Plays `steps` (default: the whole `DEMO_STORY`) into a gateway made with `demoConfig()` and `demoAgents()`, each
 * step once the gateway has nothing left to do of the previous one (`waitForIdle`). `onStep` and `onMessage` hear
 * the story as it goes; `afterStep` runs after each step, at that point.
 */
export async function playDemoStory(
  gateway: DemoStoryGateway,
  options: {
    steps?: readonly DemoStep[] | undefined;
    onStep?: ((index: number, step: DemoStep) => void) | undefined;
    onMessage?: ((who: string, message: InboundMessage) => void) | undefined;
    afterStep?: ((index: number, step: DemoStep) => Promise<void> | void) | undefined;
  } = {},
): Promise<void> {
  const steps = options.steps ?? DEMO_STORY;
  for (const [index, step] of steps.entries()) {
    options.onStep?.(index, step);
    for (const { who, message } of step.messages) {
      options.onMessage?.(who, message);
      await gateway.receive(message);
    }
    await waitForIdle(gateway);
    await options.afterStep?.(index, step);
  }
}
