import { describe, expect, it } from "vitest";
import * as core from "./index.js";

// Every name SPEC section 10 lists; tests and users import these from "@sessions/core".
const SPEC_FUNCTIONS = [
  "normalizeAgentId",
  "normalizeAccountId",
  "normalizeSessionKey",
  "parseSessionKey",
  "toStoreKey",
  "toRequestKey",
  "buildPeerSessionKey",
  "buildSubagentSessionKey",
  "sessionKindOf",
  "chatTypeOf",
  "channelOf",
  "threadOf",
  "isSubagentKey",
  "isReservedKey",
  "looksLikeSessionId",
  "resolveSendPolicy",
  "explainSendPolicy",
  "parseSendCommand",
  "resolveVisibility",
  "createAgentToAgentPolicy",
  "checkSessionAccess",
  "isReplySkip",
  "isAnnounceSkip",
  "resolvePingPongTurns",
  "resolveAnnounceTarget",
  "formatSubagentAnnounce",
  "formatDuration",
  "formatTokenCount",
  "formatUsd",
  "normalizeDeliveryContext",
  "mergeDeliveryContext",
] as const;

const SPEC_SCHEMAS = [
  "SessionsListParams",
  "SessionsListResult",
  "SessionsHistoryParams",
  "SessionsHistoryResult",
  "SessionsSendParams",
  "SessionsSendResult",
  "SessionsSpawnParams",
  "SessionsSpawnResult",
  "AgentsListParams",
  "AgentsListResult",
  "SessionsConfigSchema",
] as const;

describe("@sessions/core public API (SPEC 10)", () => {
  it.each(SPEC_FUNCTIONS)("exports function %s", (name) => {
    expect(typeof core[name]).toBe("function");
  });

  it.each(SPEC_SCHEMAS)("exports zod schema %s", (name) => {
    expect(typeof core[name].safeParse).toBe("function");
  });

  it("exports sessionTools and SessionsError", () => {
    expect(Object.keys(core.sessionTools)).toHaveLength(5);
    expect(typeof core.SessionsError.isInstance).toBe("function");
  });
});
