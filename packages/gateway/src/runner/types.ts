import type { TranscriptMessage } from "@sessions/core";
import type { z } from "zod";
import type { RunKind, RunUsage } from "../store/types.js";

/** A tool as a runner sees it: contract plus an `execute` the gateway has bound to the requester session. */
export interface RunnerTool {
  name: string;
  description: string;
  parameters: z.ZodType;
  jsonSchema: Record<string, unknown>;
  /** Runs the tool as the session it is bound to; resolves to its result object. */
  execute(params: unknown): Promise<unknown>;
}

/** Progress a runner reports while it runs: text deltas, tool calls and their results. */
export type AgentRunEvent =
  | { type: "text-delta"; text: string }
  | { type: "tool-call"; toolCallId: string; toolName: string; params: unknown }
  | { type: "tool-result"; toolCallId: string; toolName: string; result: unknown }
  /**
   * What one model step used, reported as it finishes: a run that then fails, times out or is aborted still counts
   * what it spent (its tree's budget). A result's `usage`, when the runner returns one, is the run's total and wins.
   */
  | { type: "usage"; usage: RunUsage };

/** One run as the gateway hands it to a runner. */
export interface AgentRunRequest {
  runId: string;
  agentId: string;
  sessionKey: string;
  kind: RunKind;
  model?: string | undefined;
  thinking?: string | undefined;
  /** Recent transcript, oldest first; the message that started the run is last. */
  messages: TranscriptMessage[];
  /** The message that started the run. */
  input: TranscriptMessage;
  /** System context the gateway adds: agent-to-agent context, announce instructions, sub-agent task framing. */
  system: string[];
  tools: RunnerTool[];
  /**
   * Aborted on `chat.abort`, on run timeouts, and when the gateway loses its session's lane (it could not reach the
   * store in time); a runner should stop promptly.
   */
  signal: AbortSignal;
  /**
   * Set when the run was started before and stopped before its end was recorded (its gateway lost the session's
   * lane while the store was out of reach): what the earlier attempt did — a tool call, a message elsewhere — may
   * have happened already. Absent on a first attempt.
   */
  repeat?: true | undefined;
  /** Reports progress (becomes `chat` and `agent` events). */
  emit(event: AgentRunEvent): void;
  /**
   * Present when the runner declares `steering` and the session's queue mode is `steer` or `steer-backlog`: the
   * user's messages that arrived since the last call (oldest first, each once), to add to the conversation before
   * the next model call. Call it at each model boundary (after a batch of tool calls); an empty array: none.
   */
  takeSteering?(): Promise<TranscriptMessage[]>;
}

/** What a runner returns when the run ends. */
export interface AgentRunResult {
  /** The final assistant text (absent or empty when the run produced none). */
  reply?: string | undefined;
  usage?: RunUsage | undefined;
}

/** Runs an agent turn loop. Ship your own or use `createScriptedRunner` / `createAiSdkRunner`. */
export interface AgentRunner {
  /** Runs one agent turn; resolve with the reply, throw to fail the run. */
  run(request: AgentRunRequest): Promise<AgentRunResult>;
  /** Model ids this runner accepts for overrides; when absent any id is accepted. */
  readonly models?: readonly string[] | undefined;
  /**
   * The runner takes messages at its model boundaries (`request.takeSteering`): queue modes `steer` and
   * `steer-backlog` hand it the messages that arrive while it runs. Absent: those modes act as `followup`.
   */
  readonly steering?: true | undefined;
}
