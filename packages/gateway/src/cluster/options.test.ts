import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory.js";
import type { SessionStore } from "../store/types.js";
import { clusterSettings } from "./options.js";

const shared = { ...createMemoryStore(), kind: "postgres" } as SessionStore;

describe("clusterSettings", () => {
  it("is off for single-process stores and on for any other, unless told", () => {
    expect(clusterSettings(undefined, createMemoryStore())).toBeUndefined();
    expect(clusterSettings(undefined, shared)).toEqual({
      leaseTtlMs: 15_000,
      heartbeatMs: 5000,
      recoveryIntervalMs: 1000,
      graceMs: 1500,
    });
    expect(clusterSettings(false, shared)).toBeUndefined();
    expect(clusterSettings(true, createMemoryStore())).toMatchObject({ leaseTtlMs: 15_000 });
    expect(clusterSettings({ leaseTtlMs: 900, recoveryIntervalMs: 200 }, shared)).toEqual({
      leaseTtlMs: 900,
      heartbeatMs: 300,
      recoveryIntervalMs: 200,
      graceMs: 90,
    });
  });

  it.each([
    [{ leaseTtlMs: 10 }, "cluster.leaseTtlMs"],
    [{ leaseTtlMs: 1500.5 }, "cluster.leaseTtlMs"],
    [{ recoveryIntervalMs: 0 }, "cluster.recoveryIntervalMs"],
    ["yes", "cluster"],
  ])("refuses %j with invalid_config naming %s", (option, field) => {
    expect(() => clusterSettings(option as never, shared)).toThrowError(
      expect.objectContaining({ code: "invalid_config", field }),
    );
  });
});
