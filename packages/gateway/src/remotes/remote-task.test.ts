import type { StreamResponse } from "@a2a-js/sdk";
import { TaskState } from "@a2a-js/sdk";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { textPart } from "../server/a2a/tasks.js";
import { RemoteTask, stateName } from "./remote-task.js";

const chunk = (artifactId: string, value: string, append: boolean): StreamResponse => ({
  payload: {
    $case: "artifactUpdate",
    value: {
      taskId: "t1",
      contextId: "c1",
      artifact: {
        artifactId,
        name: "",
        description: "",
        parts: [textPart(value)],
        metadata: undefined,
        extensions: [],
      },
      append,
      lastChunk: false,
      metadata: undefined,
    },
  },
});

const status = (state: TaskState, message?: string): StreamResponse => ({
  payload: {
    $case: "statusUpdate",
    value: {
      taskId: "t1",
      contextId: "c1",
      status: {
        state,
        message:
          message === undefined
            ? undefined
            : {
                messageId: "m",
                contextId: "c1",
                taskId: "t1",
                role: 2,
                parts: [textPart(message)],
                metadata: undefined,
                extensions: [],
                referenceTaskIds: [],
              },
        timestamp: undefined,
      },
      metadata: undefined,
    },
  },
});

describe("a remote task folded from its stream", () => {
  it("streams each appended chunk once and replies with the whole artifact", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        (chunks, resend) => {
          const deltas: string[] = [];
          const task = new RemoteTask((delta) => deltas.push(delta));
          for (const [i, value] of chunks.entries()) task.add(chunk("a", value, i > 0));
          // A peer that sends the whole artifact again at the end (append false): nothing streams twice.
          if (resend) task.add(chunk("a", chunks.join(""), false));
          task.add(status(TaskState.TASK_STATE_COMPLETED));
          expect(task.settled).toBe(true);
          expect(deltas.join("")).toBe(chunks.join(""));
          expect(task.outcome()).toEqual({ kind: "reply", text: chunks.join("") });
          expect([task.taskId, task.contextId]).toEqual(["t1", "c1"]);
        },
      ),
    );
  });

  it("is not settled while working; fails with the status text; asks back with the task to answer", () => {
    const task = new RemoteTask();
    task.add(status(TaskState.TASK_STATE_WORKING, "thinking"));
    expect(task.settled).toBe(false);
    task.add(status(TaskState.TASK_STATE_REJECTED, "not for me"));
    expect(task.outcome()).toEqual({ kind: "failed", state: "rejected", text: "not for me" });
    const asking = new RemoteTask();
    asking.add(status(TaskState.TASK_STATE_INPUT_REQUIRED, "which city?"));
    expect(asking.outcome()).toEqual({ kind: "reply", text: "which city?", waitingTask: "t1" });
    expect(stateName(TaskState.TASK_STATE_AUTH_REQUIRED)).toBe("auth-required");
  });

  it("takes a completed task without artifacts at its status message, and a direct message as the reply", () => {
    const task = new RemoteTask();
    task.add(status(TaskState.TASK_STATE_COMPLETED, "done and dusted"));
    expect(task.outcome()).toEqual({ kind: "reply", text: "done and dusted" });
    const direct = new RemoteTask();
    direct.add({
      payload: {
        $case: "message",
        value: {
          messageId: "m",
          contextId: "c9",
          taskId: "",
          role: 2,
          parts: [textPart("hi "), textPart("there")],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
      },
    });
    expect(direct.outcome()).toEqual({ kind: "reply", text: "hi there" });
    expect([direct.taskId, direct.contextId]).toEqual([undefined, "c9"]);
  });
});
