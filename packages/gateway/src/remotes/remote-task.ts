import { type Message, type Part, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import { textOf } from "../server/a2a/tasks.js";

/** The text of a message's or artifact's text parts (none: empty). */
const partsText = (parts: readonly Part[] | undefined): string => textOf({ parts: [...(parts ?? [])] });

/** States after which a task does nothing more on its own (terminal, or waiting for the caller). */
const SETTLED = new Set<TaskState>([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

/** How a remote's answer ended: its reply, or why there is none. */
export type RemoteOutcome =
  | { kind: "reply"; text: string; waitingTask?: string | undefined }
  | { kind: "failed"; state: string; text: string };

/**
 * What a remote agent has said so far about one message: the task it became (or the message that answered it
 * directly), its state, artifacts and status text, folded from a stream's events or a task read with `GetTask`.
 * `delta` gets the reply's new text as it streams (the first artifact's, appended or grown).
 */
export class RemoteTask {
  taskId: string | undefined;
  contextId: string | undefined;
  state: TaskState | undefined;
  private statusText = "";
  private direct: string | undefined;
  private readonly artifacts = new Map<string, string>();
  private streamedId: string | undefined;
  private streamed = "";

  constructor(private readonly delta: (text: string) => void = () => {}) {}

  /** Folds one event of `SendStreamingMessage` (or the one result of `SendMessage`). */
  add(event: StreamResponse): void {
    const payload = event.payload;
    if (payload === undefined) return;
    switch (payload.$case) {
      case "message":
        this.answered(payload.value);
        return;
      case "task":
        this.task(payload.value);
        return;
      case "statusUpdate": {
        const { value } = payload;
        this.ids(value.taskId, value.contextId);
        if (value.status !== undefined) {
          this.state = value.status.state;
          const text = partsText(value.status.message?.parts);
          if (text !== "") this.statusText = text;
        }
        return;
      }
      case "artifactUpdate": {
        const { value } = payload;
        this.ids(value.taskId, value.contextId);
        if (value.artifact === undefined) return;
        const id = value.artifact.artifactId;
        const text = partsText(value.artifact.parts);
        const next = value.append ? (this.artifacts.get(id) ?? "") + text : text;
        this.artifacts.set(id, next);
        this.stream(id, next);
        return;
      }
    }
  }

  /** Folds a task as `GetTask` (or a `SendMessage` result) tells it. */
  task(task: Task): void {
    this.ids(task.id, task.contextId);
    if (task.status !== undefined) {
      this.state = task.status.state;
      const text = partsText(task.status.message?.parts);
      if (text !== "") this.statusText = text;
    }
    for (const artifact of task.artifacts) {
      const text = partsText(artifact.parts);
      this.artifacts.set(artifact.artifactId, text);
      this.stream(artifact.artifactId, text);
    }
  }

  /** An answer as a message, without a task: the reply, at once. */
  answered(message: Message): void {
    this.ids(message.taskId, message.contextId);
    this.direct = partsText(message.parts);
    this.state = TaskState.TASK_STATE_COMPLETED;
  }

  /** The remote said all it will about the message (a reply, a failure, or a question back). */
  get settled(): boolean {
    return this.state !== undefined && SETTLED.has(this.state);
  }

  /** The end, once `settled`. */
  outcome(): RemoteOutcome {
    const state = this.state ?? TaskState.TASK_STATE_UNSPECIFIED;
    if (this.direct !== undefined) return { kind: "reply", text: this.direct };
    if (state === TaskState.TASK_STATE_COMPLETED) {
      const artifacts = [...this.artifacts.values()].filter((text) => text !== "");
      return { kind: "reply", text: artifacts.length > 0 ? artifacts.join("\n\n") : this.statusText };
    }
    if (state === TaskState.TASK_STATE_INPUT_REQUIRED || state === TaskState.TASK_STATE_AUTH_REQUIRED) {
      // A question back: the reply asks it, and the next message to this session answers the same task.
      return { kind: "reply", text: this.statusText, waitingTask: this.taskId };
    }
    return { kind: "failed", state: stateName(state), text: this.statusText };
  }

  private ids(taskId: string | undefined, contextId: string | undefined): void {
    if (taskId) this.taskId = taskId;
    if (contextId) this.contextId = contextId;
  }

  /** The reply's new text, when the first artifact grew (a replaced artifact is not streamed again). */
  private stream(id: string, text: string): void {
    this.streamedId ??= id;
    if (id !== this.streamedId || !text.startsWith(this.streamed) || text.length === this.streamed.length)
      return;
    const added = text.slice(this.streamed.length);
    this.streamed = text;
    this.delta(added);
  }
}

/** `TASK_STATE_FAILED` → `failed`. */
export function stateName(state: TaskState): string {
  const name = TaskState[state] ?? String(state);
  return name
    .replace(/^TASK_STATE_/, "")
    .toLowerCase()
    .replace(/_/g, "-");
}
