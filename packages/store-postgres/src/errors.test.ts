import { createServer } from "node:net";
import { SessionsError } from "@sessions/core";
import { entry, run } from "@sessions/gateway/store-contract";
import { afterAll, describe, expect, inject, it } from "vitest";
import { toStoreError } from "./errors.js";
import { createPostgresStore } from "./store.js";
import { freshSchema, storeOpener } from "./testing/helpers.js";

const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

const isCode = (code: string) => (error: unknown) => SessionsError.isInstance(error) && error.code === code;

/** A port with nothing listening on it. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe("errors", () => {
  it.each([
    [{ connectionString: "mysql://x" }, "connectionString"],
    [{ connectionString: url, schema: "Bad-Name" }, "schema"],
    [{ connectionString: url, schema: "x".repeat(49) }, "schema"],
    [{ connectionString: url, maxConnections: 0 }, "maxConnections"],
    [{ connectionString: url, connectTimeoutMs: 1.5 }, "connectTimeoutMs"],
  ])("refuses bad options with invalid_config naming the field (%#)", async (options, field) => {
    await expect(createPostgresStore(options)).rejects.toMatchObject({ code: "invalid_config", field });
  });

  it("answers unavailable, retryable, without the password, when no server listens", async () => {
    const port = await closedPort();
    const error = await createPostgresStore({
      connectionString: `postgres://u:secret-pw@127.0.0.1:${port}/db`,
      connectTimeoutMs: 2000,
    }).catch((e: unknown) => e);
    expect(error).toSatisfy(isCode("unavailable"));
    expect((error as SessionsError).retryAfterMs).toBeGreaterThan(0);
    expect((error as Error).message).not.toContain("secret-pw");
  });

  it("answers unavailable once closed", async () => {
    const store = await createPostgresStore({ connectionString: url, schema: freshSchema("closed") });
    await store.close();
    await expect(store.getEntry("x")).rejects.toSatisfy(isCode("unavailable"));
    await expect(store.transaction(async () => 1)).rejects.toSatisfy(isCode("unavailable"));
  });

  it("reports a broken constraint as conflict", async () => {
    const store = await stores.open(freshSchema("conflict"));
    await store.putRun(run("r1", { idempotencyKey: "k" }));
    await expect(store.putRun(run("r2", { idempotencyKey: "k" }))).rejects.toSatisfy(isCode("conflict"));
  });

  it("never commits a unit in which a statement failed, even when the work swallowed the error", async () => {
    const store = await stores.open(freshSchema("aborted"));
    await store.putRun(run("r1", { idempotencyKey: "k" }));
    const result = store.transaction(async (tx) => {
      await tx.putEntry(entry("agent:main:written-before", 1));
      await tx.putRun(run("r2", { idempotencyKey: "k" })).catch(() => undefined);
      await tx.putEntry(entry("agent:main:written-after", 1)).catch(() => undefined);
    });
    await expect(result).rejects.toSatisfy(isCode("unavailable"));
    expect(await store.getEntry("agent:main:written-before")).toBeUndefined();
    // The failed unit's connection went back healthy (or was replaced): the store keeps working.
    await store.putEntry(entry("agent:main:later", 1));
    expect(await store.getEntry("agent:main:later")).toBeDefined();
  });

  it("passes what the work throws through unchanged and rejects tx calls after the unit ended", async () => {
    const store = await stores.open(freshSchema("passthrough"));
    const boom = new TypeError("mine");
    await expect(store.transaction(async () => Promise.reject(boom))).rejects.toBe(boom);
    let escaped: Parameters<Parameters<typeof store.transaction>[0]>[0] | undefined;
    await store.transaction(async (tx) => {
      escaped = tx;
    });
    await expect(escaped?.getEntry("x")).rejects.toSatisfy(isCode("conflict"));
  });

  it("maps the server's error classes onto the store's codes", () => {
    expect(toStoreError({ code: "53100", message: "could not extend file" }, "db")).toMatchObject({
      code: "storage_full",
      retryAfterMs: 60_000,
    });
    expect(toStoreError({ code: "23505", message: "duplicate key" }, "db")).toMatchObject({
      code: "conflict",
    });
    for (const code of ["40P01", "40001", "57P01", "53300", "08006"]) {
      expect(toStoreError({ code, message: "x" }, "db")).toMatchObject({
        code: "unavailable",
        retryAfterMs: 1000,
        details: { postgres: code },
      });
    }
    const own = new SessionsError("not_found", "x");
    expect(toStoreError(own, "db")).toBe(own);
  });
});
