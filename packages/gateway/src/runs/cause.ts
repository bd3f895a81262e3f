import type { RunCause, RunRecord } from "../store/types.js";

/** A run that causes others: its id, its tree and the trace context its children continue. */
export type CausingRun = Pick<
  RunRecord,
  "runId" | "rootRunId" | "traceparent" | "hops" | "sessionKey" | "budget"
>;

/** The run that caused `run` (the one whose tool call or end started it); undefined for a tree's first run. */
export const parentRunId = (run: Pick<RunRecord, "cause">): string | undefined =>
  run.cause?.kind === "tool" || run.cause?.kind === "follow_up" ? run.cause.runId : undefined;

/** A tool call made inside a run: the run and the call's id (as its transcript records it). */
export interface ToolCall {
  run: CausingRun;
  toolCallId: string;
}

/** Where a run stands in its tree: its cause, root, depth in messages, the trace it continues and its budget. */
export interface TreePlace {
  cause: RunCause;
  rootRunId?: string;
  hops?: number;
  traceparent?: string;
  budget?: RunRecord["budget"];
}

/**
 * The place in `parent`'s tree of a run it causes: a tool call's message is one hop further from the tree's first
 * run; the follow-up of a run's end (a reply-back turn, an announce) is at its hop.
 */
export function causedBy(parent: CausingRun, cause: RunCause): TreePlace & { rootRunId: string } {
  const hops = (parent.hops ?? 0) + (cause.kind === "tool" ? 1 : 0);
  return {
    cause,
    rootRunId: parent.rootRunId ?? parent.runId,
    ...(hops > 0 ? { hops } : {}),
    ...(parent.traceparent === undefined ? {} : { traceparent: parent.traceparent }),
    ...(parent.budget === undefined ? {} : { budget: parent.budget }),
  };
}

/**
 * A run started by a session tool: by the calling run's tool call, or (no run) by a wire or API request, whose trace
 * context (`traceparent`, its `execute_tool` span's) the run continues.
 */
export function toolCause(call: ToolCall | undefined, tool: string, traceparent?: string): TreePlace {
  if (call === undefined)
    return {
      cause: { kind: "request", method: "sessions.tools.call" },
      ...(traceparent === undefined ? {} : { traceparent }),
    };
  return causedBy(call.run, { kind: "tool", runId: call.run.runId, toolCallId: call.toolCallId, tool });
}
