import { describe, expect, it } from "vitest";
import { createChunkSender } from "./chunk-sender.js";
import { SessionsError } from "./errors.js";

const unavailable = () => new SessionsError("unavailable", "platform down");

describe("createChunkSender", () => {
  it("resumes a retried key after the last piece that went out, never posting one twice", async () => {
    const posted: string[] = [];
    let failAt = 1;
    const send = createChunkSender(unavailable);
    const sendOne = async (chunk: string, i: number) => {
      if (i === failAt) throw new Error("socket hang up");
      posted.push(chunk);
      return `m${i}`;
    };
    await expect(send("k", ["a", "b", "c"], () => sendOne)).rejects.toMatchObject({ code: "unavailable" });
    failAt = -1;
    expect(await send("k", ["a", "b", "c"], () => sendOne)).toEqual({ messageIds: ["m0", "m1", "m2"] });
    expect(posted).toEqual(["a", "b", "c"]);
    // A finished key starts over: the outbox only reuses a key for a retry.
    expect(await send("k", ["x"], () => sendOne)).toEqual({ messageIds: ["m0"] });
  });

  it("forgets the progress of a permanent failure, and passes SessionsErrors through unmapped", async () => {
    const send = createChunkSender(unavailable);
    const refused = new SessionsError("invalid_params", "no such channel", { field: "to" });
    let calls = 0;
    const sendOne = async (_chunk: string, i: number) => {
      calls++;
      if (i === 1) throw refused;
      return `m${i}`;
    };
    await expect(send("k", ["a", "b"], () => sendOne)).rejects.toBe(refused);
    await expect(send("k", ["a", "b"], () => sendOne)).rejects.toBe(refused);
    expect(calls).toBe(4);
  });

  it("maps a failure of open the same way", async () => {
    const send = createChunkSender(unavailable);
    await expect(
      send("k", ["a"], async () => {
        throw new Error("fetch failed");
      }),
    ).rejects.toMatchObject({ code: "unavailable", message: "platform down" });
  });
});
