import type { Logger } from "@sessions/core";
import type { DeliveryRecord, RunRecord, StoredEntry } from "./store/types.js";

/** A run as it is about to be recorded: its id is chosen as it is written. */
export type RunDraft = Omit<RunRecord, "runId" | "inputSeq" | "idempotencyKey">;

/** A tool call inside a run, as the lifecycle reports it: its id (as the transcript records it), tool and params. */
export interface ToolCallInfo {
  toolCallId: string;
  tool: string;
  params: unknown;
  /** The session the tool acts as is sandboxed (it sees at most its own tree). */
  sandboxed?: boolean | undefined;
}

/** A tool call made outside any run (`sessions.tools.call`, `gateway.callTool`): as whom, which tool, which params. */
export interface RequestToolCallInfo {
  tool: string;
  params: unknown;
  requesterKey: string;
  sandboxed: boolean;
  /** The trace context the runs it starts continue: a `requestToolCalled` subscriber may set it (tracing does). */
  traceparent?: string | undefined;
}

/** How one attempt to send a delivery went. */
export interface DeliveryAttemptInfo {
  startedAt: number;
  endedAt: number;
  /** `retry`: it failed and will be tried again; the others are final. */
  outcome: "delivered" | "suppressed" | "failed" | "retry";
  error?: string | undefined;
  /** The platform's message ids, when delivered. */
  receipt?: readonly string[] | undefined;
}

/**
 * What happens to runs and deliveries, in order: the hooks a module subscribes to instead of being called by name
 * from where a run ends. Every hook is called synchronously; one that has async work tracks it (`ctx.tasks`).
 */
export interface LifecycleHooks {
  /**
   * A run is about to be recorded: a subscriber may add to its record (tracing adds its span's context). Called
   * again for a retried start; `declined` follows when the start recorded nothing new.
   */
  recording(run: RunDraft): void;
  /** The start recorded nothing new (a repeated idempotency key, or a failed write): undo what `recording` began. */
  declined(run: RunDraft): void;
  /**
   * The run is recorded (queued or running), before it can emit any event. `entry`: its session's entry as the
   * start's unit of work read it (undefined when the session has none, or the start did not read it).
   */
  accepted(run: RunRecord, entry?: StoredEntry): void;
  /**
   * A run taken over from a gateway that lost the store mid-run is queued here to run again (`runs/recovery.ts`).
   * Not `accepted` again: its request was accepted once, where it was recorded.
   */
  resumed(run: RunRecord): void;
  /** It starts executing here. */
  started(run: RunRecord): void;
  /** The runner called a tool. */
  toolCalled(run: RunRecord, call: ToolCallInfo): void;
  /** The tool answered (`result`), or threw (`error`, and `result` is the error result the runner got). */
  toolReturned(run: RunRecord, call: ToolCallInfo, result: unknown, error?: string): void;
  /** A tool is called outside any run, its session's entry read (the call is the one `requestToolReturned` gets). */
  requestToolCalled(call: RequestToolCallInfo): void;
  /** That tool answered (`result`), or threw (`error`, its `SessionsError` code or `internal`): the request fails. */
  requestToolReturned(
    call: RequestToolCallInfo,
    result: unknown,
    error?: { message: string; code: string },
  ): void;
  /**
   * The run ended. `followUps`: this gateway does what follows it (its own recorded end, or one it took over from a
   * gateway that is gone); false when another gateway's end stood (it does them).
   */
  ended(run: RunRecord, followUps: boolean): void;
  /** One attempt to send a delivery was made. */
  deliveryAttempted(delivery: DeliveryRecord, attempt: DeliveryAttemptInfo): void;
  /** A delivery reached its final status (`delivered`, `suppressed` or `failed`). */
  deliveryFinal(delivery: DeliveryRecord): void;
}

export type LifecycleEvent = keyof LifecycleHooks;

/** The subscribers of each hook; `emit` calls them in order, and one that throws is logged, never rethrown. */
export class Lifecycle {
  readonly #subscribers = new Map<LifecycleEvent, ((...args: never[]) => void)[]>();

  constructor(private readonly logger: Pick<Logger, "error">) {}

  /**
   * Subscribes to some hooks (the object's own properties); returns the unsubscribe. Both replace the lists rather
   * than change them, so an emit under way calls the subscribers it started with and needs no copy of its own.
   */
  subscribe(hooks: Partial<LifecycleHooks>): () => void {
    const added = Object.entries(hooks) as [LifecycleEvent, (...args: never[]) => void][];
    for (const [event, fn] of added)
      this.#subscribers.set(event, [...(this.#subscribers.get(event) ?? []), fn]);
    return () => {
      for (const [event, fn] of added) {
        const list = [...(this.#subscribers.get(event) ?? [])];
        const at = list.indexOf(fn);
        if (at >= 0) list.splice(at, 1);
        this.#subscribers.set(event, list);
      }
    };
  }

  emit<E extends LifecycleEvent>(event: E, ...args: Parameters<LifecycleHooks[E]>): void {
    const list = this.#subscribers.get(event);
    if (list === undefined) return;
    for (const fn of list) {
      try {
        (fn as unknown as (...a: Parameters<LifecycleHooks[E]>) => void)(...args);
      } catch (error) {
        this.logger.error(`a ${event} hook threw`, { error: String(error) });
      }
    }
  }
}
