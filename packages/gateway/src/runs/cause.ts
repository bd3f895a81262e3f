import type { RunCause, RunRecord } from "../store/types.js";

/** A run that causes others: its id, its tree and the trace context its children continue. */
export type CausingRun = Pick<RunRecord, "runId" | "rootRunId" | "traceparent">;

/** A tool call made inside a run: the run and the call's id (as its transcript records it). */
export interface ToolCall {
  run: CausingRun;
  toolCallId: string;
}

/** The place in `parent`'s tree of a run it causes: the cause, the tree's root and the trace it continues. */
export function causedBy(
  parent: CausingRun,
  cause: RunCause,
): { cause: RunCause; rootRunId: string; traceparent?: string } {
  const place = { cause, rootRunId: parent.rootRunId ?? parent.runId };
  return parent.traceparent === undefined ? place : { ...place, traceparent: parent.traceparent };
}

/** A run started by a session tool: by the calling run's tool call, or (no run) by a wire or API request. */
export function toolCause(
  call: ToolCall | undefined,
  tool: string,
): { cause: RunCause; rootRunId?: string; traceparent?: string } {
  if (call === undefined) return { cause: { kind: "request", method: "sessions.tools.call" } };
  return causedBy(call.run, { kind: "tool", runId: call.run.runId, toolCallId: call.toolCallId, tool });
}
