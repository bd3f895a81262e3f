import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { GatewayServer } from "../server/listen.js";
import { cleanupDirs, connectRaw, eventually, type Harness, harness, STORE_KINDS } from "../test-kit.js";

afterAll(cleanupDirs);

const TOKEN = "wire-reads-token";

/**
 * `sessions.list` and `chat.history` over the wire send the text of what they return in process (a file store keeps
 * the wire text of its kept entries and messages: it must follow every change).
 */
describe.each(STORE_KINDS)("reads over the wire on the %s store", (kind) => {
  let h: Harness;
  let server: GatewayServer;
  let release = () => {};
  afterEach(async () => {
    release();
    await server?.close();
    await h?.close();
  });

  it("answer the text of the in-process answer, as sessions, transcripts and runs change", async () => {
    let held = new Promise<void>((resolve) => (release = resolve));
    h = await harness(kind, {
      main: async (turn) => {
        if (turn.text === "hold") await held;
        return `echo: ${turn.text}`;
      },
    });
    server = await h.gateway.listen({ auth: { tokens: [{ token: TOKEN }] } });
    const client = await connectRaw(server.url, TOKEN);
    const send = async (sessionKey: string, message: string) => {
      const { runId } = await h.gateway.chat.send({
        sessionKey,
        message,
        idempotencyKey: `${sessionKey}-${message}`,
      });
      return runId;
    };
    /** The wire answer, parsed and written again (its own key order), against the in-process one. */
    // Retried until both agree (a write the gateway finishes after a run's end may land between the two reads); a
    // wrong or stale text never agrees.
    const same = async (method: string, params: Record<string, unknown>) => {
      for (let twice = 0; twice < 2; twice++)
        await eventually(async () => {
          const frame = await client.call(method, params);
          expect(frame.ok).toBe(true);
          expect(JSON.stringify(frame.payload)).toBe(
            JSON.stringify(await h.gateway.call(method as "sessions.list", params)),
          );
        }, `${method} over the wire as in process`);
      return (await client.call(method, params)).payload as Record<string, unknown>;
    };
    for (const key of ["a", "b", "c"])
      for (const text of ["one", "two", "three"]) await h.gateway.agentWait({ runId: await send(key, text) });

    await same("sessions.list", {});
    await same("sessions.list", { limit: 2 });
    await same("sessions.list", { sortBy: "key", limit: 2 });
    const page = await same("chat.history", { sessionKey: "a", limit: 4 });
    expect(page.hasMore).toBe(true);
    await same("chat.history", { sessionKey: "a", limit: 2, cursor: page.nextCursor });
    await same("chat.history", { sessionKey: "a", limit: 4, offset: 1 });

    await h.gateway.call("sessions.patch", { key: "a", label: "renamed" });
    const rows = (await same("sessions.list", {})).sessions as { key: string; label?: string }[];
    expect(rows.find((r) => r.key === "agent:main:a")?.label).toBe("renamed");

    const holding = await send("b", "hold");
    const queued = await send("b", "after");
    const busy = (await same("sessions.list", {})).sessions as { key: string; activeRunIds?: string[] }[];
    // Both were made in the same (manual) millisecond: listed by run id.
    expect(busy.find((r) => r.key === "agent:main:b")?.activeRunIds).toEqual([holding, queued].sort());
    release();
    held = Promise.resolve();
    await h.gateway.agentWait({ runId: queued });
    const idle = (await same("sessions.list", {})).sessions as { key: string; hasActiveRun: boolean }[];
    expect(idle.every((r) => !r.hasActiveRun)).toBe(true);

    const newest = await same("chat.history", { sessionKey: "b", limit: 2 });
    expect((newest.messages as { content: unknown }[]).map((m) => m.content)).toEqual([
      "echo: hold",
      "echo: after",
    ]);
    await h.gateway.call("sessions.delete", { key: "b" });
    expect((await same("chat.history", { sessionKey: "b", limit: 2 })).messages).toEqual([]);
    await h.gateway.agentWait({ runId: await send("b", "again") });
    const again = await same("chat.history", { sessionKey: "b", limit: 4 });
    expect((again.messages as { content: unknown }[]).map((m) => m.content)).toEqual([
      "again",
      "echo: again",
    ]);
    await same("sessions.list", {});
    client.close();
  });
});
