import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import type { Gateway } from "../gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createMemoryStore } from "../store/memory.js";
import { connectRaw as connect } from "../test-kit.js";
import type { GatewayServer } from "./listen.js";

describe("token scopes", () => {
  let gateway: Gateway;
  let server: GatewayServer;

  beforeAll(async () => {
    gateway = createGateway({
      store: createMemoryStore(),
      runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    });
    await gateway.call("chat.send", { sessionKey: "main", message: "hi", idempotencyKey: "k1" });
    server = await gateway.listen({
      auth: {
        tokens: [
          { token: "admin-token-1", label: "ops" },
          { token: "reader-token-1", scopes: ["operator.read"] },
          { token: "writer-token-1", scopes: ["operator.read", "operator.write"] },
        ],
      },
    });
  });

  afterAll(async () => {
    await server.close();
    await gateway.close();
  });

  it("a read-scoped token reads but every change is MISSING_SCOPE, whatever scopes it asks for", async () => {
    const reader = await connect(server.url, "reader-token-1");
    expect(reader.hello.payload?.auth).toEqual({ role: "operator", scopes: ["operator.read"] });
    expect((await reader.call("sessions.list", {})).ok).toBe(true);
    for (const [method, params] of [
      ["sessions.patch", { key: "main", sendPolicy: "deny" }],
      ["chat.send", { sessionKey: "main", message: "x", idempotencyKey: "k2" }],
      ["chat.abort", { sessionKey: "main" }],
      ["sessions.delete", { key: "main" }],
    ] as const) {
      const res = await reader.call(method, params);
      expect(res.ok).toBe(false);
      expect(res.error).toMatchObject({ code: "FORBIDDEN", details: { code: "MISSING_SCOPE" } });
    }
    expect((await gateway.sessions.list({})).sessions[0]?.sendPolicy).toBeUndefined();
    reader.close();
  });

  it("a token gets no more than its scopes and an unscoped token keeps all three", async () => {
    const writer = await connect(server.url, "writer-token-1");
    expect(writer.hello.payload?.auth).toEqual({
      role: "operator",
      scopes: ["operator.read", "operator.write"],
    });
    expect((await writer.call("sessions.patch", { key: "main", label: "x" })).ok).toBe(true);
    expect((await writer.call("sessions.delete", { key: "main" })).error?.details).toMatchObject({
      missingScope: "operator.admin",
    });
    writer.close();
    const admin = await connect(server.url, "admin-token-1");
    expect(admin.hello.payload?.auth).toMatchObject({
      scopes: ["operator.read", "operator.write", "operator.admin"],
    });
    admin.close();
  });

  it("refuses unknown or empty scopes as invalid_config naming the token", async () => {
    await expect(
      gateway.listen({
        auth: { tokens: [{ token: "t-1234567", scopes: ["operator.root" as "operator.read"] }] },
      }),
    ).rejects.toMatchObject({ code: "invalid_config", field: "auth.tokens[0].scopes" });
    await expect(
      gateway.listen({ auth: { tokens: [{ token: "t-1234567", scopes: [] }] } }),
    ).rejects.toMatchObject({
      field: "auth.tokens[0].scopes",
    });
  });
});
