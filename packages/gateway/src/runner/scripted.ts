import { SessionsError, type TranscriptMessage } from "@sessions/core";
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import type { RunKind, RunUsage } from "../store/types.js";
import { messageText } from "../transcript.js";
import type { AgentRunner, AgentRunRequest, AgentRunResult, RunnerTool } from "./types.js";

/** What a scripted agent function receives for one run: the message, the history, and helpers to call tools, stream and wait. */
export interface ScriptedTurn {
  runId: string;
  agentId: string;
  sessionKey: string;
  kind: RunKind;
  model?: string | undefined;
  /** The text of the message that started the run. */
  text: string;
  input: TranscriptMessage;
  messages: TranscriptMessage[];
  system: string[];
  /** Names of the tools this run may call. */
  toolNames: string[];
  /** Calls a tool the gateway gave this run (recorded in the transcript like a model's call). */
  callTool<T = Record<string, unknown>>(name: string, params?: unknown): Promise<T>;
  /** Streams a text delta. */
  say(text: string): void;
  /** Waits on the gateway clock; rejects when the run is aborted. */
  sleep(ms: number): Promise<void>;
  /**
   * Says `text` a word at a time, `msPerWord` apart (default 40), as a model writes (a reply streams into its chat
   * with `channels.<id>.streaming`); resolves with `text`, to return as the reply.
   */
  write(text: string, msPerWord?: number): Promise<string>;
  signal: AbortSignal;
  /**
   * A model boundary: the users' messages handed to this run since the last call (queue modes `steer`,
   * `steer-backlog`, with `steering: true`); always empty otherwise.
   */
  takeSteering(): Promise<TranscriptMessage[]>;
}

/** What a scripted agent returns: the reply text (or nothing), optionally with usage. */
export type ScriptedReply =
  | string
  | { reply?: string | undefined; usage?: RunUsage | undefined }
  | undefined
  | null;
/** A scripted agent: a plain function of its turn. */
export type ScriptedAgent = (turn: ScriptedTurn) => ScriptedReply | Promise<ScriptedReply>;

/** Options of `createScriptedRunner`. */
export interface ScriptedRunnerOptions {
  /** One script per agent id; `fallback` answers agents without one. */
  agents: Record<string, ScriptedAgent>;
  fallback?: ScriptedAgent | undefined;
  clock?: Clock | undefined;
  models?: readonly string[] | undefined;
  /** Usage reported per run (default: ~4 characters a token, deterministic). */
  usage?: ((input: string, reply: string) => RunUsage) | undefined;
  /** Declare steering support (`AgentRunner.steering`): scripts take messages with `turn.takeSteering()`. */
  steering?: boolean | undefined;
}

function defaultUsage(input: string, reply: string): RunUsage {
  const inputTokens = Math.ceil(input.length / 4) + 20;
  const outputTokens = Math.ceil(reply.length / 4);
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
}

/** A deterministic runner for tests and the demo: each agent is a plain function of its turn. */
export function createScriptedRunner(options: ScriptedRunnerOptions): AgentRunner {
  const clock = options.clock ?? systemClock;
  let callCounter = 0;
  return {
    ...(options.models === undefined ? {} : { models: options.models }),
    ...(options.steering === true ? { steering: true as const } : {}),
    async run(request: AgentRunRequest): Promise<AgentRunResult> {
      const script = Object.hasOwn(options.agents, request.agentId)
        ? options.agents[request.agentId]
        : options.fallback;
      if (script === undefined) {
        throw new SessionsError("not_found", `No script for agent "${request.agentId}"`, {
          field: "agentId",
        });
      }
      // The request's tools and signal are made on first use: so are the turn's.
      let byName: Map<string, RunnerTool> | undefined;
      let names: string[] | undefined;
      const tools = () => {
        byName ??= new Map(request.tools.map((t) => [t.name, t]));
        return byName;
      };
      const text = messageText(request.input);
      const turn: ScriptedTurn = {
        runId: request.runId,
        agentId: request.agentId,
        sessionKey: request.sessionKey,
        kind: request.kind,
        ...(request.model === undefined ? {} : { model: request.model }),
        text,
        input: request.input,
        get messages() {
          return request.messages;
        },
        system: request.system,
        get toolNames() {
          names ??= [...tools().keys()];
          return names;
        },
        get signal() {
          return request.signal;
        },
        async callTool<T>(name: string, params: unknown = {}): Promise<T> {
          const tool = tools().get(name);
          if (tool === undefined) {
            throw new SessionsError("forbidden", `Tool ${name} is not available to this run`, {
              field: "name",
            });
          }
          const toolCallId = `call_${++callCounter}`;
          request.emit({ type: "tool-call", toolCallId, toolName: name, params });
          const result = await tool.execute(params);
          request.emit({ type: "tool-result", toolCallId, toolName: name, result });
          return result as T;
        },
        say(delta: string) {
          request.emit({ type: "text-delta", text: delta });
        },
        async takeSteering() {
          return (await request.takeSteering?.()) ?? [];
        },
        async write(text: string, msPerWord = 40) {
          for (const word of text.split(/(?<=\s)/)) {
            turn.say(word);
            await turn.sleep(msPerWord);
          }
          return text;
        },
        sleep(ms: number) {
          return new Promise<void>((resolve, reject) => {
            if (request.signal.aborted) return reject(request.signal.reason);
            const handle = clock.setTimeout(() => {
              request.signal.removeEventListener("abort", onAbort);
              resolve();
            }, ms);
            const onAbort = () => {
              clock.clearTimeout(handle);
              reject(request.signal.reason);
            };
            request.signal.addEventListener("abort", onAbort, { once: true });
          });
        },
      };
      const out = await script(turn);
      const reply = typeof out === "string" ? out : (out?.reply ?? "");
      const usage = (typeof out === "object" && out?.usage) || (options.usage ?? defaultUsage)(text, reply);
      return { reply, usage };
    },
  };
}
