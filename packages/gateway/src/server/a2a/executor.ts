import { TaskState } from "@a2a-js/sdk";
import {
  AgentEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { parseTraceparent } from "@sessions/core";
import type { Gateway, GatewayEvent } from "../../gateway.js";
import { Caller } from "./caller.js";
import {
  agentMessage,
  contextSessionKey,
  endMessage,
  replyArtifact,
  taskRunKey,
  taskState,
  textOf,
} from "./tasks.js";

const now = () => new Date().toISOString();

/** A caller's `traceparent` header, when it is one (a malformed one is dropped, not an error). */
function validTraceparent(value: string | undefined): string | undefined {
  return value !== undefined && parseTraceparent(value) !== undefined ? value : undefined;
}

/** The hops of the tree a message comes from, when the caller (a gateway of this SDK) says: `sessions.hops`. */
function hopsOf(metadata: Record<string, unknown> | undefined): number | undefined {
  const hops = metadata?.["sessions.hops"];
  return typeof hops === "number" && Number.isInteger(hops) && hops >= 1 && hops <= 100 ? hops : undefined;
}

/**
 * One agent served over A2A: a task is a run of the context's session (`contextSessionKey`), started with
 * `agent` under the task's id (so a repeat of the request finds its run), its message marked as coming from
 * another agent (inter-session provenance, source `a2a:<caller>`), its reply the task's artifact and final message.
 * The reply's text deltas stream as artifact updates.
 */
export function createA2AExecutor(gateway: Gateway, agentId: string): AgentExecutor {
  return {
    async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
      const { taskId, contextId } = request;
      const sessionKey = contextSessionKey(agentId, contextId);
      const user = request.context.user;
      const caller = user?.userName || "anonymous";
      const traceparent = user instanceof Caller ? validTraceparent(user.traceparent) : undefined;
      const hops = hopsOf(request.userMessage.metadata);
      let runId: string | undefined;
      let streamed = false;
      const early: { runId: string; text: string }[] = [];
      const delta = (text: string) => {
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: replyArtifact(text),
            append: streamed,
            lastChunk: false,
            metadata: undefined,
          }),
        );
        streamed = true;
      };
      const unsubscribe = gateway.subscribe((event: GatewayEvent) => {
        if (event.type !== "chat" || event.state !== "delta" || typeof event.deltaText !== "string") return;
        // Only this context's session: a busy gateway's other runs are neither looked at nor kept meanwhile.
        if (event.sessionKey !== sessionKey) return;
        if (runId === undefined) early.push({ runId: event.runId, text: event.deltaText });
        else if (event.runId === runId) delta(event.deltaText);
      });
      try {
        const accepted = await gateway.agent({
          sessionKey,
          agentId,
          message: textOf(request.userMessage),
          idempotencyKey: taskRunKey(taskId),
          ...(traceparent === undefined ? {} : { traceparent }),
          inputProvenance: {
            kind: "inter_session",
            sourceSessionKey: `a2a:${caller}`,
            sourceChannel: "a2a",
            sourceTool: "a2a",
            ...(hops === undefined ? {} : { hops }),
          },
        });
        runId = accepted.runId;
        bus.publish(
          AgentEvent.task({
            id: taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() },
            artifacts: [],
            history: [request.userMessage],
            metadata: { sessionKey, runId },
          }),
        );
        // Deltas the run emitted before its id was known here.
        for (const seen of early.splice(0)) if (seen.runId === runId) delta(seen.text);
        for (;;) {
          const waited = await gateway.agentWait({ runId, timeoutMs: 60_000 });
          if (waited.status !== "timeout" || waited.endedAt !== undefined) break;
        }
        const run = await gateway.store.getRun(runId);
        if (run === undefined) throw new Error(`run ${runId} is gone`);
        const text = endMessage(run);
        if (run.status === "ok") {
          bus.publish(
            AgentEvent.artifactUpdate({
              taskId,
              contextId,
              artifact: replyArtifact(run.reply ?? ""),
              append: false,
              lastChunk: true,
              metadata: undefined,
            }),
          );
        }
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: {
              state: taskState(run.status),
              message: text === undefined || text === "" ? undefined : agentMessage(text, taskId, contextId),
              timestamp: now(),
            },
            metadata: undefined,
          }),
        );
      } finally {
        unsubscribe();
      }
    },

    async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
      const run = await gateway.store.findRunByIdempotencyKey(taskRunKey(taskId));
      if (run === undefined) {
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId: "",
            status: {
              state: TaskState.TASK_STATE_CANCELED,
              message: agentMessage("canceled", taskId, ""),
              timestamp: now(),
            },
            metadata: undefined,
          }),
        );
        return;
      }
      // The run stops; its task's execution publishes the end (canceled) as it sees the run end.
      await gateway.chat.abort({ sessionKey: run.sessionKey, runId: run.runId });
    },
  };
}
