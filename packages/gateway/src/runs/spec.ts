import type { DeliveryContext, TranscriptMessage } from "@sessions/core";
import type { ToolContext } from "../context.js";
import type { RerunRecord, RunCause, RunKind, RunRecord, StoreOps } from "../store/types.js";

/** Everything needed to start a run; `tools: null` runs without tools (announce steps). */
export interface RunSpec {
  /** Set when the caller must know the id before the run exists (sub-agent records). */
  runId?: string | undefined;
  /** The id the run gets unless another run already has it (`chat.send` uses its idempotency key). */
  preferredRunId?: string | undefined;
  followUp?: RunRecord["followUp"] | undefined;
  sessionKey: string;
  kind: RunKind;
  /** What made the run, and (unless it starts a tree) its tree's root; the W3C trace context it continues. */
  cause: RunCause;
  rootRunId?: string | undefined;
  /** How many messages from the tree's first run this one is (see `causedBy`). */
  hops?: number | undefined;
  traceparent?: string | undefined;
  /** The budget of the run's tree (its root's, copied by `causedBy`); the run starts only if it is not spent. */
  budget?: RunRecord["budget"];
  /**
   * The tree's guards for this start (hop limit, loop guard): they throw to refuse it. Run with the budget's draw,
   * one start of the tree at a time, so that what they read is what the start then adds to.
   */
  guard?: (() => Promise<void>) | undefined;
  input: TranscriptMessage;
  idempotencyKey?: string | undefined;
  deliverTo?: DeliveryContext | undefined;
  system?: string[] | undefined;
  /** Whose session tools the run gets (built when its runner first asks for them); null: none. */
  tools: ToolContext | null;
  timeoutMs?: number | undefined;
  model?: string | undefined;
  thinking?: string | undefined;
  subagentSlot?: boolean | undefined;
  /** A user's message (`chat.send`, `agent`, inbound): the session's queue mode applies (see `RunRecord.userMessage`). */
  userMessage?: true | undefined;
  /**
   * Writes that belong with the start of a new run, in its unit of work (after the idempotency check, before the
   * input message): an inbound message's route and session touch. Not called for a repeated idempotency key.
   */
  prepare?: ((tx: StoreOps) => Promise<void>) | undefined;
}

/** What `spec` leaves on its run's record so another gateway can run it again (see `RunRecord.rerun`). */
export function rerunOf(spec: RunSpec): RerunRecord {
  const rerun: RerunRecord = { tools: spec.tools === null ? null : { ...spec.tools } };
  if (spec.system !== undefined) rerun.system = spec.system;
  if (spec.timeoutMs !== undefined) rerun.timeoutMs = spec.timeoutMs;
  if (spec.model !== undefined) rerun.model = spec.model;
  if (spec.thinking !== undefined) rerun.thinking = spec.thinking;
  if (spec.subagentSlot === true) rerun.subagentSlot = true;
  return rerun;
}

/** The spec a run taken over from a gateway that lost the store runs again with: its record's, and its input. */
export function specOfRecord(run: RunRecord & { rerun: RerunRecord }, input: TranscriptMessage): RunSpec {
  const { rerun } = run;
  return {
    runId: run.runId,
    sessionKey: run.sessionKey,
    kind: run.kind,
    cause: run.cause ?? { kind: "request", method: "agent" },
    rootRunId: run.rootRunId,
    hops: run.hops,
    traceparent: run.traceparent,
    budget: run.budget,
    followUp: run.followUp,
    input,
    idempotencyKey: run.idempotencyKey,
    deliverTo: run.deliverTo,
    system: rerun.system,
    tools: rerun.tools === null ? null : { ...rerun.tools },
    timeoutMs: rerun.timeoutMs,
    model: rerun.model,
    thinking: rerun.thinking,
    subagentSlot: rerun.subagentSlot,
    userMessage: run.userMessage,
  };
}
