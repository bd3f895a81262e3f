import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DM_SCOPES } from "./keys.js";
import { DM_SCOPE_CAPABILITY_PREFIX, dmScopeCapability, dmScopeOf } from "./protocol.js";

describe("session.dmScope in hello-ok capabilities", () => {
  it("reads back every scope it names, among any other capabilities", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...DM_SCOPES),
        fc.array(fc.string().filter((c) => !c.startsWith(DM_SCOPE_CAPABILITY_PREFIX))),
        fc.nat(),
        (scope, others, at) => {
          const capabilities = [...others];
          capabilities.splice(at % (others.length + 1), 0, dmScopeCapability(scope));
          expect(dmScopeOf({ features: { capabilities } })).toBe(scope);
        },
      ),
    );
    expect(dmScopeCapability("per-peer")).toBe("session.dmScope=per-peer");
  });

  it("names none for an OpenClaw hello-ok, or for a scope it does not know", () => {
    expect(dmScopeOf({ features: { capabilities: ["agent.spawnedBy"] } })).toBeUndefined();
    expect(dmScopeOf({ features: {} })).toBeUndefined();
    expect(dmScopeOf({})).toBeUndefined();
    expect(dmScopeOf({ features: { capabilities: ["session.dmScope=per-galaxy"] } })).toBeUndefined();
    expect(dmScopeOf({ features: { capabilities: ["session.dmScope="] } })).toBeUndefined();
  });
});
