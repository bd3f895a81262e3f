import Ajv2020 from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SessionsError } from "./errors.js";
import { LIMITS, type LimitName } from "./limits.js";
import { SESSION_TOOL_NAMES } from "./tool-names.js";
import { parseToolParams, sessionTools } from "./tool-registry.js";
import { MAX_MESSAGE_BYTES, utf8Length } from "./tools.js";

function paramsError(name: Parameters<typeof parseToolParams>[0], input: unknown): SessionsError {
  try {
    parseToolParams(name, input);
  } catch (e) {
    if (SessionsError.isInstance(e)) return e;
    throw e;
  }
  throw new Error(`expected ${name} params to be rejected`);
}

describe("sessionTools contracts", () => {
  it("has the five tools with descriptions", () => {
    expect(Object.keys(sessionTools).sort()).toEqual([...SESSION_TOOL_NAMES].sort());
    for (const name of SESSION_TOOL_NAMES) {
      expect(sessionTools[name].name).toBe(name);
      expect(sessionTools[name].description.length).toBeGreaterThan(20);
    }
  });

  it("exports JSON Schema objects without top-level anyOf/oneOf, integers as integer", () => {
    for (const name of SESSION_TOOL_NAMES) {
      const schema = sessionTools[name].jsonSchema;
      expect(schema.type).toBe("object");
      expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(schema).not.toHaveProperty("anyOf");
      expect(schema).not.toHaveProperty("oneOf");
      expect(schema.additionalProperties).toBe(false);
      expect(JSON.stringify(schema)).not.toContain("9007199254740991");
    }
    const list = sessionTools.sessions_list.jsonSchema.properties as Record<string, { type?: string }>;
    expect(list.limit?.type).toBe("integer");
    // sessionKey, label or labels: which one is checked by zod (a JSON Schema `oneOf` is what providers reject).
    expect(sessionTools.sessions_send.jsonSchema.required).toEqual(["message"]);
    expect(sessionTools.sessions_spawn.jsonSchema.required).toEqual(["task"]);
  });

  it("JSON Schema and zod agree on what they accept", () => {
    const ajv = new Ajv2020({ strict: false });
    const validators = Object.fromEntries(
      SESSION_TOOL_NAMES.map((n) => [n, ajv.compile(sessionTools[n].jsonSchema)]),
    );
    const samples: [(typeof SESSION_TOOL_NAMES)[number], unknown][] = [
      ["sessions_list", {}],
      ["sessions_list", { kinds: ["main", "group"], limit: 10, activeMinutes: 5, messageLimit: 3 }],
      ["sessions_list", { query: 'deploy "prod" OR NEAR(', limit: 5 }],
      ["sessions_list", { query: 3 }],
      ["sessions_list", { kinds: ["bogus"] }],
      ["sessions_list", { limit: 1.5 }],
      ["sessions_list", { activeMinutes: 0 }],
      ["sessions_list", { extra: true }],
      ["sessions_history", { sessionKey: "main", includeTools: true }],
      ["sessions_history", { sessionKey: "" }],
      ["sessions_history", {}],
      ["sessions_send", { sessionKey: "main", message: "hi", timeoutSeconds: 0 }],
      ["sessions_send", { sessionKey: "main", message: "" }],
      ["sessions_send", { sessionKey: "main", message: "hi", timeoutSeconds: -1 }],
      ["sessions_send", { label: "ops", message: "hi" }],
      ["sessions_send", { labels: ["ops", "dev"], agentId: "main", message: "hi", timeoutSeconds: 0 }],
      ["sessions_send", { labels: [], message: "hi" }],
      ["sessions_spawn", { task: "t", thread: true, mode: "session", cleanup: "delete" }],
      ["sessions_spawn", { task: "t", mode: "fork" }],
      ["agents_list", {}],
      ["agents_list", { x: 1 }],
    ];
    for (const [name, input] of samples) {
      const zodOk = sessionTools[name].parameters.safeParse(input).success;
      expect({ name, input, ok: validators[name]?.(input) }).toEqual({ name, input, ok: zodOk });
    }
  });
});

describe("parseToolParams", () => {
  it("applies defaults and clamps", () => {
    expect(parseToolParams("sessions_list", {})).toEqual({ limit: 50, messageLimit: 0 });
    expect(parseToolParams("sessions_list", { limit: 1000, messageLimit: 99 })).toEqual({
      limit: 200,
      messageLimit: 20,
    });
    expect(parseToolParams("sessions_list", { limit: -5, messageLimit: -1 })).toEqual({
      limit: 1,
      messageLimit: 0,
    });
    expect(parseToolParams("sessions_history", { sessionKey: " main " })).toEqual({
      sessionKey: "main",
      limit: 50,
      includeTools: false,
    });
    expect(parseToolParams("sessions_history", { sessionKey: "x", limit: 5000 }).limit).toBe(1000);
    expect(parseToolParams("sessions_send", { sessionKey: "x", message: "hi" }).timeoutSeconds).toBe(30);
    expect(parseToolParams("agents_list", undefined)).toEqual({});
  });

  it("derives spawn mode and cleanup", () => {
    expect(parseToolParams("sessions_spawn", { task: "t" })).toMatchObject({
      mode: "run",
      cleanup: "keep",
      thread: false,
    });
    expect(parseToolParams("sessions_spawn", { task: "t", cleanup: "delete" })).toMatchObject({
      mode: "run",
      cleanup: "delete",
    });
    expect(parseToolParams("sessions_spawn", { task: "t", thread: true, cleanup: "delete" })).toMatchObject({
      mode: "session",
      cleanup: "keep",
    });
    expect(parseToolParams("sessions_spawn", { task: "t", thread: true, mode: "run" })).toMatchObject({
      mode: "run",
    });
    expect(parseToolParams("sessions_spawn", { task: "t", agentId: "Research Team" }).agentId).toBe(
      "research-team",
    );
  });

  it.each([
    ["sessions_list", { kinds: ["main", "bogus"] }, "kinds[1]"],
    ["sessions_list", { limit: "10" }, "limit"],
    ["sessions_list", { activeMinutes: 0 }, "activeMinutes"],
    ["sessions_list", { lmit: 3 }, ""],
    ["sessions_history", {}, "sessionKey"],
    ["sessions_history", { sessionKey: "   " }, "sessionKey"],
    ["sessions_send", { sessionKey: "main", message: "   " }, "message"],
    ["sessions_send", { sessionKey: "main", message: "x".repeat(MAX_MESSAGE_BYTES + 1) }, "message"],
    ["sessions_send", { sessionKey: "main", message: "hi", timeoutSeconds: 2.5 }, "timeoutSeconds"],
    ["sessions_send", { message: "hi" }, "sessionKey"],
    ["sessions_send", { sessionKey: "main", label: "ops", message: "hi" }, "label"],
    ["sessions_send", { label: "ops", labels: ["dev"], message: "hi" }, "labels"],
    ["sessions_send", { sessionKey: "main", agentId: "ops", message: "hi" }, "agentId"],
    ["sessions_send", { labels: [], message: "hi" }, "labels"],
    ["sessions_spawn", { task: "t", mode: "session" }, "mode"],
    ["sessions_spawn", { task: "t", cleanup: "purge" }, "cleanup"],
    ["sessions_spawn", {}, "task"],
    ["agents_list", { verbose: true }, ""],
  ] as const)("%s %j → invalid_params naming %j", (name, input, field) => {
    const error = paramsError(name, input);
    expect(error.code).toBe("invalid_params");
    if (field !== "") {
      expect(error.field).toBe(field);
      expect(error.message).toContain(field);
    }
  });

  it("rejects unknown tool names and non-object input with a typed error", () => {
    expect(paramsError("nope" as never, {}).field).toBe("name");
    expect(paramsError("sessions_list", "limit=5").code).toBe("invalid_params");
    expect(paramsError("sessions_list", [1]).code).toBe("invalid_params");
  });

  it("never throws anything but a SessionsError", () => {
    fc.assert(
      fc.property(fc.constantFrom(...SESSION_TOOL_NAMES), fc.anything(), (name, input) => {
        try {
          parseToolParams(name, input);
        } catch (e) {
          expect(SessionsError.isInstance(e)).toBe(true);
        }
      }),
    );
  });
});

type LimitCase = [tool: (typeof SESSION_TOOL_NAMES)[number], field: string, limit: LimitName, item?: unknown];

/** Every string and array parameter of every tool, with its documented maximum (`item` marks an array). */
const LIMIT_CASES: readonly LimitCase[] = [
  ["sessions_list", "kinds", "kinds", "main"],
  ["sessions_list", "query", "search"],
  ["sessions_history", "sessionKey", "key"],
  ["sessions_history", "deliveryId", "id"],
  ["sessions_send", "sessionKey", "key"],
  ["sessions_send", "message", "toolMessageBytes"],
  ["sessions_send", "label", "label"],
  ["sessions_send", "labels", "labels", "ops"],
  ["sessions_send", "agentId", "id"],
  ["sessions_spawn", "task", "toolMessageBytes"],
  ["sessions_spawn", "label", "label"],
  ["sessions_spawn", "agentId", "id"],
  ["sessions_spawn", "model", "id"],
  ["sessions_spawn", "thinking", "id"],
];

const LIMIT_BASE: Record<(typeof SESSION_TOOL_NAMES)[number], Record<string, unknown>> = {
  sessions_list: {},
  sessions_history: { sessionKey: "main" },
  sessions_send: { sessionKey: "main", message: "hi" },
  sessions_spawn: { task: "t" },
  agents_list: {},
};

/** The other parameters a case's field is given with: a broadcast's fields go without a sessionKey. */
function baseFor(name: (typeof SESSION_TOOL_NAMES)[number], field: string): Record<string, unknown> {
  if (name !== "sessions_send" || !["label", "labels", "agentId"].includes(field)) return LIMIT_BASE[name];
  return { message: "hi", ...(field === "agentId" ? { label: "ops" } : {}) };
}

function sized(length: number, item: unknown): unknown {
  return item === undefined ? "x".repeat(length) : Array.from({ length }, () => item);
}

describe("tool parameter limits", () => {
  it("every string and array parameter has maxLength / maxItems in the JSON Schema, as the table says", () => {
    const found: string[] = [];
    for (const name of SESSION_TOOL_NAMES) {
      const properties = sessionTools[name].jsonSchema.properties as Record<string, Record<string, unknown>>;
      for (const [field, node] of Object.entries(properties)) {
        if (node.type === "string" && node.enum === undefined)
          found.push(`${name} ${field} ${node.maxLength}`);
        if (node.type === "array") found.push(`${name} ${field} ${node.maxItems}`);
      }
    }
    expect(found.sort()).toEqual(LIMIT_CASES.map(([n, f, limit]) => `${n} ${f} ${LIMITS[limit]}`).sort());
  });

  it.each(LIMIT_CASES)(
    "%s %s: at the maximum is accepted, one over → invalid_params",
    (name, field, limit, item) => {
      const max = LIMITS[limit];
      expect(() =>
        parseToolParams(name, { ...baseFor(name, field), [field]: sized(max, item) }),
      ).not.toThrow();
      const error = paramsError(name, { ...baseFor(name, field), [field]: sized(max + 1, item) });
      expect(error.code).toBe("invalid_params");
      expect(error.field).toBe(field);
      expect(error.message).toContain(field);
    },
  );

  it("counts message and task in UTF-8 bytes", () => {
    const half = MAX_MESSAGE_BYTES / 2;
    expect(
      parseToolParams("sessions_send", { sessionKey: "main", message: "é".repeat(half) }).message,
    ).toHaveLength(half);
    expect(paramsError("sessions_send", { sessionKey: "main", message: "é".repeat(half + 1) }).field).toBe(
      "message",
    );
    expect(paramsError("sessions_spawn", { task: "€".repeat(half) }).field).toBe("task");
  });

  it("an oversize string or array is only ever invalid_params naming its field", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...LIMIT_CASES),
        fc.integer({ min: 1, max: 2048 }),
        fc.string({ minLength: 1, maxLength: 1, unit: "binary" }),
        ([name, field, limit, item], over, char) => {
          const length = LIMITS[limit] + over;
          const value = item === undefined ? char.repeat(length) : sized(length, item);
          const error = paramsError(name, { ...baseFor(name, field), [field]: value });
          expect(error.code).toBe("invalid_params");
          expect(error.field).toBe(field);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("utf8Length", () => {
  it("counts UTF-8 bytes", () => {
    expect(utf8Length("abc")).toBe(3);
    expect(utf8Length("é")).toBe(2);
    expect(utf8Length("€")).toBe(3);
    expect(utf8Length("😀")).toBe(4);
    expect(utf8Length("\ud800")).toBe(3);
  });

  it("matches TextEncoder", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        expect(utf8Length(s)).toBe(new TextEncoder().encode(s).length);
      }),
    );
  });
});
