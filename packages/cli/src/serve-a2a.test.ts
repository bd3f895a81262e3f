import { afterEach, describe, expect, it } from "vitest";
import { serve, stopServed } from "./test-kit.js";

afterEach(stopServed);

/** One JSON-RPC call to the main agent over A2A (`version`: the A2A-Version header, none for a v0.3 peer). */
async function call(http: string, method: string, params: unknown, version?: string) {
  const res = await fetch(`${http}a2a/main`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(version === undefined ? {} : { "A2A-Version": version }),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { result: Record<string, unknown> };
}

describe("serve --a2a", () => {
  it("serves the agents over A2A on its port: the card, SendMessage (v1.0) and message/send (v0.3)", async () => {
    const gateway = await serve(["--a2a", "--no-console"]);
    await expect.poll(() => gateway.log()).toContain(`a2a ${gateway.http}a2a/<agentId>/`);
    const card = (await (
      await fetch(`${gateway.http}a2a/main/.well-known/agent-card.json`, {
        headers: { "A2A-Version": "1.0" },
      })
    ).json()) as { supportedInterfaces: { url: string; protocolVersion: string }[] };
    expect(card.supportedInterfaces.map((i) => [i.url, i.protocolVersion])).toEqual([
      [`${gateway.http}a2a/main`, "1.0"],
      [`${gateway.http}a2a/main`, "0.3"],
    ]);
    const message = { messageId: "m-1", role: "ROLE_USER", parts: [{ text: "hello over a2a" }] };
    const sent = await call(gateway.http, "SendMessage", { message }, "1.0");
    const task = sent.result.task as {
      contextId: string;
      status: { state: string };
      artifacts: { parts: { text: string }[] }[];
    };
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts[0]?.parts[0]?.text).toContain("hello over a2a");
    const old = await call(gateway.http, "message/send", {
      message: {
        kind: "message",
        messageId: "m-2",
        role: "user",
        parts: [{ kind: "text", text: "and from v0.3" }],
      },
    });
    expect(old.result).toMatchObject({ kind: "task", status: { state: "completed" } });
  });

  it("serves no A2A without the flag", async () => {
    const gateway = await serve(["--no-console"]);
    expect((await fetch(`${gateway.http}a2a/main/.well-known/agent-card.json`)).status).toBe(426);
  });
});
