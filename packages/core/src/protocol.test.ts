import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { SessionsError } from "./errors.js";
import { LIMITS, type LimitName } from "./limits.js";
import {
  ConnectParamsSchema,
  GATEWAY_METHODS,
  type GatewayMethodName,
  METHOD_PARAMS,
  parseMethodParams,
} from "./protocol.js";
import { toSessionsError } from "./schema-errors.js";

type Json = Record<string, unknown>;

/** A copy of `base` with `value` at the dotted `path`. */
function withPath(base: Json, path: string, value: unknown): Json {
  const [head, ...rest] = path.split(".") as [string, ...string[]];
  if (rest.length === 0) return { ...base, [head]: value };
  return { ...base, [head]: withPath((base[head] as Json | undefined) ?? {}, rest.join("."), value) };
}

/** `value` at `field`; a field ending in `[]` is the first item of that array. */
function place(base: Json, field: string, value: unknown): Json {
  return field.endsWith("[]") ? withPath(base, field.slice(0, -2), [value]) : withPath(base, field, value);
}

/** The field an error names for `field` (`keys[]` → `keys[0]`). */
const named = (field: string) => (field.endsWith("[]") ? `${field.slice(0, -2)}[0]` : field);

/** Every string (`maxLength`) and array (`maxItems`) leaf of a JSON Schema, by dotted path; enums excluded. */
function boundedLeaves(node: Json, path = ""): { path: string; max: number | undefined }[] {
  if (Array.isArray(node.anyOf)) return (node.anyOf as Json[]).flatMap((n) => boundedLeaves(n, path));
  if (node.type === "object" && node.properties !== undefined) {
    return Object.entries(node.properties as Record<string, Json>).flatMap(([name, child]) =>
      boundedLeaves(child, path === "" ? name : `${path}.${name}`),
    );
  }
  if (node.type === "array") {
    const items = (node.items ?? {}) as Json;
    const inner = items.type === "string" && items.enum === undefined ? [`${path}[]`] : [];
    return [
      { path, max: node.maxItems as number | undefined },
      ...inner.map((p) => ({ path: p, max: items.maxLength as number | undefined })),
    ];
  }
  if (node.type === "string" && node.enum === undefined && node.const === undefined) {
    return [{ path, max: node.maxLength as number | undefined }];
  }
  return [];
}

const jsonOf = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Json;

const BASE: Record<GatewayMethodName, Json> = {
  "sessions.list": {},
  "sessions.search": { query: "deploy" },
  "sessions.resolve": {},
  "sessions.patch": { key: "main" },
  "sessions.delete": { key: "main" },
  "chat.history": { sessionKey: "main" },
  "chat.send": { sessionKey: "main", message: "hi", idempotencyKey: "k1" },
  "chat.abort": { sessionKey: "main" },
  agent: { message: "hi", idempotencyKey: "k1" },
  "agent.wait": { runId: "r1" },
  "agents.list": {},
  "runs.list": {},
  "runs.tree": { runId: "r1" },
  "deliveries.get": { id: "d1" },
  "deliveries.list": {},
  "deliveries.retry": { id: "d1" },
  "bindings.list": {},
  "sessions.tools.call": { requesterKey: "main", name: "sessions_list" },
  "sessions.subscribe": {},
  "sessions.unsubscribe": {},
};

/** Marks a `traceparent` case: a valid one of a later version (which may carry more fields), padded to length. */
const TRACEPARENT = Symbol("traceparent");

type Case = [method: GatewayMethodName, field: string, limit: LimitName, item?: unknown];

/** Every string and array parameter of every method, with its documented maximum (`item` marks an array). */
const CASES: readonly Case[] = [
  ["sessions.list", "agentId", "id"],
  ["sessions.list", "label", "label"],
  ["sessions.list", "spawnedBy", "key"],
  ["sessions.list", "search", "search"],
  ["sessions.list", "kinds", "kinds", "main"],
  ["sessions.list", "cursor", "cursor"],
  ["sessions.search", "query", "search"],
  ["sessions.search", "agentId", "id"],
  ["sessions.search", "kinds", "kinds", "main"],
  ["sessions.search", "requesterKey", "key"],
  ["sessions.resolve", "key", "key"],
  ["sessions.resolve", "sessionId", "id"],
  ["sessions.resolve", "label", "label"],
  ["sessions.resolve", "agentId", "id"],
  ["sessions.resolve", "spawnedBy", "key"],
  ["sessions.patch", "key", "key"],
  ["sessions.patch", "label", "label"],
  ["sessions.patch", "model", "id"],
  ["sessions.patch", "thinkingLevel", "id"],
  ["sessions.patch", "verboseLevel", "id"],
  ["sessions.delete", "key", "key"],
  ["chat.history", "sessionKey", "key"],
  ["chat.history", "cursor", "cursor"],
  ["chat.send", "sessionKey", "key"],
  ["chat.send", "message", "message"],
  ["chat.send", "idempotencyKey", "idempotencyKey"],
  ["chat.abort", "sessionKey", "key"],
  ["chat.abort", "runId", "id"],
  ["agent", "message", "message"],
  ["agent", "idempotencyKey", "idempotencyKey"],
  ["agent", "agentId", "id"],
  ["agent", "sessionKey", "key"],
  ["agent", "channel", "id"],
  ["agent", "to", "target"],
  ["agent", "accountId", "id"],
  ["agent", "threadId", "id"],
  ["agent", "lane", "id"],
  ["agent", "label", "label"],
  ["agent", "extraSystemPrompt", "extraSystemPrompt"],
  ["agent", "spawnedBy", "key"],
  ["agent", "inputProvenance.kind", "id"],
  ["agent", "inputProvenance.sourceSessionKey", "key"],
  ["agent", "inputProvenance.sourceChannel", "id"],
  ["agent", "inputProvenance.sourceTool", "id"],
  ["agent", "traceparent", "id", TRACEPARENT],
  ["agent.wait", "runId", "id"],
  ["runs.list", "sessionKey", "key"],
  ["runs.tree", "runId", "id"],
  ["runs.tree", "requesterKey", "key"],
  ["deliveries.get", "id", "id"],
  ["deliveries.list", "sessionKey", "key"],
  ["deliveries.list", "runId", "id"],
  ["deliveries.retry", "id", "id"],
  ["bindings.list", "sessionKey", "key"],
  ["chat.send", "traceparent", "id", TRACEPARENT],
  ["sessions.tools.call", "requesterKey", "key"],
  ["sessions.tools.call", "name", "id"],
  ["sessions.subscribe", "keys", "subscriptions", "main"],
  ["sessions.subscribe", "keys[]", "key"],
  ["sessions.subscribe", "runIds", "subscriptions", "r1"],
  ["sessions.subscribe", "runIds[]", "id"],
  ["sessions.unsubscribe", "keys", "subscriptions", "main"],
  ["sessions.unsubscribe", "keys[]", "key"],
  ["sessions.unsubscribe", "runIds", "subscriptions", "r1"],
  ["sessions.unsubscribe", "runIds[]", "id"],
];

function sized(length: number, item: unknown): unknown {
  if (item === TRACEPARENT) {
    const head = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-";
    return head + "x".repeat(length - head.length);
  }
  return item === undefined ? "x".repeat(length) : Array.from({ length }, () => item);
}

function baseFor(method: GatewayMethodName, field: string): Json {
  // inputProvenance.kind is required once inputProvenance is present.
  return field.startsWith("inputProvenance.")
    ? withPath(BASE[method], "inputProvenance", { kind: "inter_session" })
    : BASE[method];
}

function methodError(method: GatewayMethodName, params: unknown): SessionsError {
  try {
    parseMethodParams(method, params);
  } catch (e) {
    if (SessionsError.isInstance(e)) return e;
    throw e;
  }
  throw new Error(`expected ${method} params to be rejected`);
}

describe("METHOD_PARAMS limits", () => {
  it("bounds every string and array parameter of every method, and the table lists each one", () => {
    const found: string[] = [];
    for (const method of GATEWAY_METHODS) {
      for (const leaf of boundedLeaves(jsonOf(METHOD_PARAMS[method]))) {
        expect({ method, path: leaf.path, max: leaf.max }).toEqual({
          method,
          path: leaf.path,
          max: expect.any(Number),
        });
        found.push(`${method} ${leaf.path} ${leaf.max}`);
      }
    }
    expect(found.sort()).toEqual(CASES.map(([m, f, limit]) => `${m} ${f} ${LIMITS[limit]}`).sort());
  });

  it.each(CASES)(
    "%s %s: at the maximum is accepted, one over → invalid_params",
    (method, field, limit, item) => {
      const base = baseFor(method, field);
      const max = LIMITS[limit];
      expect(() => parseMethodParams(method, place(base, field, sized(max, item)))).not.toThrow();
      const error = methodError(method, place(base, field, sized(max + 1, item)));
      expect(error.code).toBe("invalid_params");
      expect(error.field).toBe(named(field));
      expect(error.message).toContain(named(field));
    },
  );

  it("rejects a 40,000-item kinds filter before it reaches a store", () => {
    const error = methodError("sessions.list", { kinds: Array.from({ length: 40_000 }, () => "main") });
    expect(error).toMatchObject({ code: "invalid_params", field: "kinds" });
  });

  it("rejects unknown methods naming the method", () => {
    expect(methodError("nope" as GatewayMethodName, {})).toMatchObject({
      code: "invalid_params",
      field: "method",
    });
  });

  it("takes sessions.subscribe bare, with all: true, with session keys or with run ids", () => {
    for (const method of ["sessions.subscribe", "sessions.unsubscribe"] as const) {
      expect(parseMethodParams(method, undefined)).toEqual({});
      expect(parseMethodParams(method, { all: true })).toEqual({ all: true });
      expect(parseMethodParams(method, { keys: [" main "], runIds: ["r1"] })).toEqual({
        keys: ["main"],
        runIds: ["r1"],
      });
      expect(methodError(method, { all: false })).toMatchObject({ field: "all" });
      expect(methodError(method, { keys: [""] })).toMatchObject({ field: "keys[0]" });
      expect(methodError(method, { junk: 1 })).toMatchObject({ code: "invalid_params" });
    }
  });

  it("an oversize string or array anywhere is only ever invalid_params naming its field", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CASES),
        fc.integer({ min: 1, max: 2048 }),
        fc.string({ minLength: 1, maxLength: 1, unit: "binary" }),
        (testCase, over, char) => {
          const [method, field, limit, item] = testCase;
          const length = LIMITS[limit] + over;
          const value = item === undefined ? char.repeat(length) : sized(length, item);
          const error = methodError(method, place(baseFor(method, field), field, value));
          expect(error.code).toBe("invalid_params");
          expect(error.field).toBe(named(field));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("never throws anything but a SessionsError invalid_params", () => {
    fc.assert(
      fc.property(fc.constantFrom(...GATEWAY_METHODS), fc.anything(), (method, params) => {
        try {
          parseMethodParams(method, params);
        } catch (e) {
          expect(SessionsError.isInstance(e)).toBe(true);
          expect((e as SessionsError).code).toBe("invalid_params");
        }
      }),
    );
  });
});

describe("ConnectParamsSchema limits", () => {
  const base = {
    minProtocol: 4,
    maxProtocol: 4,
    client: { id: "cli", version: "1.0.0", platform: "node", mode: "operator" },
  };
  const cases: readonly [field: string, limit: LimitName, item?: unknown][] = [
    ["client.id", "clientField"],
    ["client.version", "clientField"],
    ["client.platform", "clientField"],
    ["client.mode", "clientField"],
    ["client.displayName", "displayName"],
    ["role", "clientField"],
    ["scopes", "scopes", "operator.read"],
    ["scopes[]", "scope"],
    ["caps", "caps", "tool-events"],
    ["auth.token", "token"],
  ];

  function connectError(params: unknown): SessionsError | undefined {
    const result = ConnectParamsSchema.safeParse(params);
    return result.success ? undefined : toSessionsError(result.error, "invalid_params", "connect");
  }

  it("bounds every string and array field, and the table lists each one", () => {
    const leaves = boundedLeaves(jsonOf(ConnectParamsSchema));
    expect(leaves.map((l) => `${l.path} ${l.max}`).sort()).toEqual(
      cases.map(([f, limit]) => `${f} ${LIMITS[limit]}`).sort(),
    );
  });

  it.each(cases)("%s: at the maximum is accepted, one over → invalid_params", (field, limit, item) => {
    const max = LIMITS[limit];
    const at = (n: number) =>
      field === "scopes[]"
        ? withPath(base, "scopes", [sized(n, undefined)])
        : withPath(base, field, sized(n, item));
    expect(connectError(at(max))).toBeUndefined();
    const error = connectError(at(max + 1));
    expect(error?.code).toBe("invalid_params");
    expect(error?.field).toBe(field === "scopes[]" ? "scopes[0]" : field);
  });
});
