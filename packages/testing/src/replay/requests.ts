import type { RecordedRequest, RecordedTurn } from "./recording.js";

/** A request to send again to replay a recording (`gateway.agent` or `gateway.chat.send`). */
export interface ReplayedRequest {
  /** The recorded run it started: the run it starts now is paired with it. */
  runId: string;
  method: "agent" | "chat.send";
  params: {
    sessionKey: string;
    message: string;
    /** The recorded run id: `chat.send` makes it its run's id again, and it is unique for `agent`. */
    idempotencyKey: string;
    budget?: RecordedRequest["budget"] | undefined;
    traceparent?: string | undefined;
    deliver?: true | undefined;
    /** `agent` only: the recorded delivery target (`chat.send` delivers to its session's own). */
    channel?: string | undefined;
    to?: string | undefined;
    accountId?: string | undefined;
    threadId?: string | undefined;
  };
}

/**
 * The requests that started a recorded exchange, in the order of their turns: one for each run whose turn is of kind
 * `agent` or `chat`, with the budget, trace context and delivery target its `request` line recorded (recordings made
 * before requests were recorded have none: sent without them). The idempotency key is the recorded run id, so the
 * replay's roots are paired with the recorded ones whatever keys the recorded requests had.
 */
export function recordedRequests(lines: readonly Record<string, unknown>[]): ReplayedRequest[] {
  const asked = new Map<string, RecordedRequest>();
  for (const line of lines) if (line.type === "request") asked.set(String(line.runId), line as never);
  const roots = new Map<string, ReplayedRequest>();
  for (const line of lines) {
    if (line.type !== "turn" || (line.kind !== "agent" && line.kind !== "chat")) continue;
    const turn = line as unknown as RecordedTurn;
    // A run started again after a lost lane has a turn per attempt; its request is sent once.
    if (roots.has(turn.runId)) continue;
    const request = asked.get(turn.runId);
    const method = turn.kind === "agent" ? "agent" : "chat.send";
    const deliver = request?.deliver;
    roots.set(turn.runId, {
      runId: turn.runId,
      method,
      params: {
        sessionKey: turn.sessionKey,
        message: turn.input,
        idempotencyKey: turn.runId,
        ...(request?.budget === undefined ? {} : { budget: request.budget }),
        ...(request?.traceparent === undefined ? {} : { traceparent: request.traceparent }),
        ...(deliver === undefined ? {} : { deliver: true as const }),
        ...(deliver === undefined || method !== "agent" ? {} : target(deliver)),
      },
    });
  }
  return [...roots.values()];
}

/** A recorded delivery target as `agent`'s params: only the parts it has. */
function target(deliver: NonNullable<RecordedRequest["deliver"]>) {
  return Object.fromEntries(
    (["channel", "to", "accountId", "threadId"] as const).flatMap((name) =>
      deliver[name] === undefined ? [] : [[name, deliver[name]]],
    ),
  ) as Pick<ReplayedRequest["params"], "channel" | "to" | "accountId" | "threadId">;
}
