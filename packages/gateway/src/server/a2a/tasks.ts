import type { ListTasksRequest, ListTasksResponse } from "@a2a-js/sdk";
import { type Artifact, type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import type { TaskStore } from "@a2a-js/sdk/server";
import { parseSessionKey, SessionsError } from "@sessions/core";
import type { RunRecord, RunStatus, SessionStore } from "../../store/types.js";

/** The idempotency key of the run an A2A task started: a task is one run, found again by it after a restart. */
export const taskRunKey = (taskId: string): string => `a2a:${taskId}`;

/** What an A2A context id may be: it becomes the last segment of a session key. */
const CONTEXT_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * The session of one A2A context of an agent: `agent:<agentId>:a2a:direct:<contextId>` (lower-cased, as keys are).
 * @throws SessionsError `invalid_params` (field `contextId`) for an id that cannot be a key segment.
 */
export function contextSessionKey(agentId: string, contextId: string): string {
  if (!CONTEXT_ID.test(contextId)) {
    throw new SessionsError(
      "invalid_params",
      "contextId must be 1 to 128 letters, digits, '.', '_' or '-' (it names a session)",
      { field: "contextId" },
    );
  }
  return `agent:${agentId}:a2a:direct:${contextId.toLowerCase()}`;
}

/** A task's state from its run's status. */
export function taskState(status: RunStatus): TaskState {
  switch (status) {
    case "queued":
      return TaskState.TASK_STATE_SUBMITTED;
    case "running":
      return TaskState.TASK_STATE_WORKING;
    case "ok":
      return TaskState.TASK_STATE_COMPLETED;
    case "aborted":
      return TaskState.TASK_STATE_CANCELED;
    default:
      return TaskState.TASK_STATE_FAILED;
  }
}

/** A text part. */
export const textPart = (text: string): Part => ({
  content: { $case: "text", value: text },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain",
});

/** The text of a message's text parts. */
export function textOf(message: Pick<Message, "parts">): string {
  return message.parts.map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("");
}

/** A message of the agent (its reply, or why the task failed). */
export function agentMessage(text: string, taskId: string, contextId: string): Message {
  return {
    messageId: `${taskId}:reply`,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The artifact a task's reply is: one text part, id `reply`. */
export function replyArtifact(text: string): Artifact {
  return {
    artifactId: "reply",
    name: "reply",
    description: "",
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
  };
}

/** The status message a run ends with: its reply, or its error. */
export function endMessage(run: RunRecord): string | undefined {
  return run.status === "ok" ? run.reply : run.error;
}

/** A task as its run's record tells it (after a restart, when the SDK's own record of it is gone). */
export function taskOfRun(run: RunRecord, taskId: string): Task {
  const contextId = parseSessionKey(run.sessionKey)?.peerId ?? run.sessionKey;
  const text = endMessage(run);
  return {
    id: taskId,
    contextId,
    status: {
      state: taskState(run.status),
      message: text === undefined || text === "" ? undefined : agentMessage(text, taskId, contextId),
      timestamp: new Date(run.endedAt ?? run.startedAt ?? run.createdAt).toISOString(),
    },
    artifacts: run.status === "ok" && run.reply ? [replyArtifact(run.reply)] : [],
    history: [],
    metadata: { sessionKey: run.sessionKey, runId: run.runId },
  };
}

/** Tasks held while they are recent (the SDK rewrites them as their events come); older ones come from their runs. */
const KEEP = 10_000;

/**
 * The SDK's task store over the gateway's: tasks as the SDK builds them, kept in memory while recent, and any task
 * whose run is in the store read back from the run (`GetTask` after a restart, or on another gateway).
 */
export class RunTaskStore implements TaskStore {
  readonly #tasks = new Map<string, Task>();
  constructor(private readonly store: Pick<SessionStore, "findRunByIdempotencyKey">) {}

  async save(task: Task): Promise<void> {
    this.#tasks.delete(task.id);
    this.#tasks.set(task.id, task);
    if (this.#tasks.size > KEEP) this.#tasks.delete(this.#tasks.keys().next().value as string);
  }

  async load(taskId: string): Promise<Task | undefined> {
    const held = this.#tasks.get(taskId);
    if (held !== undefined) return held;
    const run = await this.store.findRunByIdempotencyKey(taskRunKey(taskId));
    return run === undefined ? undefined : taskOfRun(run, taskId);
  }

  async list(params: ListTasksRequest): Promise<ListTasksResponse> {
    const tasks = [...this.#tasks.values()].filter(
      (task) =>
        params.contextId === "" || params.contextId === undefined || task.contextId === params.contextId,
    );
    const pageSize = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
    return { tasks: tasks.slice(-pageSize), nextPageToken: "", pageSize, totalSize: tasks.length };
  }
}
