import { normalizeChoice } from "./choice.js";
import { describeValue } from "./errors.js";
import { compileGlob, type GlobMatcher } from "./glob.js";
import {
  agentIdOf,
  isReservedKey,
  isSubagentKey,
  normalizeAgentId,
  type ParsedSessionKey,
  parseSessionKey,
  toStoreKey,
} from "./keys.js";

/** The values of `tools.sessions.visibility`, narrowest first. */
export const VISIBILITIES = ["self", "tree", "agent", "all"] as const;
/** How far a session's tools can see (SPEC 7). */
export type Visibility = (typeof VISIBILITIES)[number];
/** `agents.defaults.sandbox.sessionToolsVisibility`: `spawned` narrows sandboxed sessions to `tree`, `all` leaves them as configured. */
export type SandboxVisibility = "spawned" | "all";

const RANK: Readonly<Record<Visibility, number>> = { self: 0, tree: 1, agent: 2, all: 3 };

/** A visibility as configured, trimmed and case-insensitive (`" ALL "` → `all`); `undefined` when unknown. */
export function normalizeVisibility(value: unknown): Visibility | undefined {
  return normalizeChoice(value, VISIBILITIES);
}

/** Narrower of two visibilities. */
export function minVisibility(a: Visibility, b: Visibility): Visibility {
  return RANK[a] <= RANK[b] ? a : b;
}

/**
 * The effective visibility: the configured value (default `tree`; trimmed and case-insensitive, unknown values
 * fall back to `tree`), clamped to at most `tree` for sandboxed sessions under `sessionToolsVisibility: "spawned"`
 * (the default). The clamp never widens (`self` stays `self`).
 */
export function resolveVisibility(
  options: { visibility?: unknown; sandboxed?: boolean | undefined; sandboxVisibility?: unknown } = {},
): Visibility {
  const configured = normalizeVisibility(options?.visibility) ?? "tree";
  if (options?.sandboxed !== true) return configured;
  const sandbox = normalizeChoice(options.sandboxVisibility, ["spawned", "all"] as const) ?? "spawned";
  return sandbox === "all" ? configured : minVisibility(configured, "tree");
}

/** `tools.agentToAgent`: the gate for cross-agent access (off by default). */
export interface AgentToAgentConfig {
  enabled?: boolean | undefined;
  /** `*` globs, case-insensitive. An empty list allows any pair; a blank pattern matches nothing. */
  allow?: readonly string[] | undefined;
}

/** A compiled agent-to-agent gate, from `createAgentToAgentPolicy`. */
export interface AgentToAgentPolicy {
  readonly enabled: boolean;
  /** Same agent is always allowed; cross-agent needs `enabled` and both ids matching `allow` (empty = any). */
  isAllowed(requesterAgentId: string, targetAgentId: string): boolean;
}

/**
 * Builds the agent-to-agent gate from `tools.agentToAgent` (default: disabled). It fails closed: an entry of `allow`
 * that is blank or not a string matches no agent (it does not turn the list into "allow any").
 */
export function createAgentToAgentPolicy(config?: AgentToAgentConfig | null): AgentToAgentPolicy {
  const enabled = config?.enabled === true;
  const patterns: GlobMatcher[] = Array.isArray(config?.allow)
    ? config.allow.map((p: unknown) => compileGlob(typeof p === "string" ? p : ""))
    : [];
  const matches = (agentId: string): boolean =>
    patterns.length === 0 || patterns.some((p) => p.test(agentId));
  return {
    enabled,
    isAllowed(requesterAgentId: string, targetAgentId: string): boolean {
      const requester = normalizeAgentId(requesterAgentId);
      const target = normalizeAgentId(targetAgentId);
      if (requester === target) return true;
      return enabled && matches(requester) && matches(target);
    },
  };
}

/** What a tool wants to do with a target session. */
export type SessionAction = "list" | "history" | "send" | "spawn";

/** Why `checkSessionAccess` said no: a stable code to branch on. */
export type AccessDenialCode =
  | "invalid_key"
  | "reserved_key"
  | "send_to_self"
  | "visibility_self"
  | "visibility_tree"
  | "visibility_agent"
  | "agent_to_agent_disabled"
  | "agent_to_agent_denied"
  | "spawn_depth_exceeded"
  | "spawn_agent_not_allowed";

/** The answer of `checkSessionAccess`: allowed, or a code and a message naming the setting that would allow it. */
export type AccessDecision = { allowed: true } | { allowed: false; code: AccessDenialCode; message: string };

/** The question `checkSessionAccess` answers: may the requester do `action` to the target? */
export interface CheckSessionAccessInput {
  action: SessionAction;
  requesterKey: string;
  /** The session acted on; for `spawn`, the child's key (or any key of the target agent). */
  targetKey: string;
  visibility?: Visibility | undefined;
  agentToAgent?: AgentToAgentPolicy | AgentToAgentConfig | undefined;
  /** The target entry's `spawnedBy` (for `tree`). */
  spawnedBy?: string | undefined;
  /** `spawn`: the requester's sub-agent depth (0 for ordinary sessions). */
  requesterDepth?: number | undefined;
  /** `spawn`: `agents.defaults.subagents.maxSpawnDepth` (default 1: sub-agents cannot spawn). */
  maxSpawnDepth?: number | undefined;
  /** `spawn`: `agents.list[<requester>].subagents.allowAgents`. */
  allowAgents?: readonly string[] | undefined;
}

const ALLOWED: AccessDecision = Object.freeze({ allowed: true });

interface CachedPolicy {
  policy: AgentToAgentPolicy;
  enabled: unknown;
  allow: unknown;
  allowLength: number;
}
const policyCache = new WeakMap<object, CachedPolicy>();

// Configs are compiled once per object; the snapshot check recompiles when the object was changed in place.
function toPolicy(value: CheckSessionAccessInput["agentToAgent"]): AgentToAgentPolicy {
  if (value === undefined || value === null || typeof value !== "object") return createAgentToAgentPolicy();
  if (typeof (value as AgentToAgentPolicy).isAllowed === "function") return value as AgentToAgentPolicy;
  const config = value as AgentToAgentConfig;
  const allowLength = Array.isArray(config.allow) ? config.allow.length : -1;
  const cached = policyCache.get(config);
  if (
    cached !== undefined &&
    cached.enabled === config.enabled &&
    cached.allow === config.allow &&
    cached.allowLength === allowLength
  ) {
    return cached.policy;
  }
  const policy = createAgentToAgentPolicy(config);
  policyCache.set(config, { policy, enabled: config.enabled, allow: config.allow, allowLength });
  return policy;
}

function deny(code: AccessDenialCode, message: string): AccessDecision {
  return { allowed: false, code, message };
}

/** The store key of a parsed (possibly bare) key, scoped to `agentId`, and the agent it belongs to. */
function scoped(parsed: ParsedSessionKey, agentId: string): { key: string; agentId: string } {
  if (parsed.agentId !== undefined) return { key: parsed.key, agentId: parsed.agentId };
  const key = toStoreKey({ agentId, key: parsed.key });
  return { key, agentId: agentIdOf(key) };
}

function checkSpawn(
  input: CheckSessionAccessInput,
  requesterKey: string,
  requesterAgent: string,
  targetAgent: string,
): AccessDecision {
  const maxDepth =
    typeof input.maxSpawnDepth === "number" && Number.isFinite(input.maxSpawnDepth)
      ? Math.max(0, Math.floor(input.maxSpawnDepth))
      : 1;
  const depth =
    typeof input.requesterDepth === "number" && Number.isFinite(input.requesterDepth)
      ? Math.max(0, Math.floor(input.requesterDepth))
      : isSubagentKey(requesterKey)
        ? 1
        : 0;
  if (depth >= maxDepth) {
    return deny(
      "spawn_depth_exceeded",
      `sessions_spawn is not allowed from a sub-agent at depth ${depth} (agents.defaults.subagents.maxSpawnDepth is ${maxDepth}; raise it to allow nested spawning)`,
    );
  }
  if (targetAgent === requesterAgent) return ALLOWED;
  const allow = Array.isArray(input.allowAgents)
    ? input.allowAgents.filter((a): a is string => typeof a === "string")
    : [];
  if (allow.some((a) => a.trim() === "*") || allow.some((a) => normalizeAgentId(a) === targetAgent))
    return ALLOWED;
  const allowed = [requesterAgent, ...allow.map((a) => normalizeAgentId(a))].filter(
    (id, i, all) => all.indexOf(id) === i,
  );
  return deny(
    "spawn_agent_not_allowed",
    `Agent "${requesterAgent}" may not spawn under agent "${targetAgent}"; allowed: ${allowed.join(", ")} (add it to agents.list[${requesterAgent}].subagents.allowAgents, or "*")`,
  );
}

const CROSS_AGENT_CODE: Readonly<Record<Exclude<Visibility, "all">, AccessDenialCode>> = {
  self: "visibility_self",
  tree: "visibility_tree",
  agent: "visibility_agent",
};

/**
 * The one access decision behind list, history, send and spawn (SPEC 7). Bare keys are scoped to the requester's
 * agent. Denials carry a stable `code` and a message naming the setting that would allow the access. Never throws.
 */
export function checkSessionAccess(input: CheckSessionAccessInput): AccessDecision {
  const requester = parseSessionKey(input?.requesterKey);
  if (requester === null) {
    return deny("invalid_key", `Invalid requester session key: ${describeValue(input?.requesterKey)}`);
  }
  const { key: requesterKey, agentId: requesterAgent } = scoped(requester, requester.agentId ?? "main");
  const parsedTarget = parseSessionKey(input.targetKey);
  if (parsedTarget === null)
    return deny("invalid_key", `Invalid session key: ${describeValue(input.targetKey)}`);
  if (isReservedKey(parsedTarget.key))
    return deny("reserved_key", `Session key "${parsedTarget.key}" is reserved`);
  const { key: targetKey, agentId: targetAgent } = scoped(parsedTarget, requesterAgent);
  if (input.action === "spawn") return checkSpawn(input, requesterKey, requesterAgent, targetAgent);

  if (targetKey === requesterKey) {
    return input.action === "send"
      ? deny(
          "send_to_self",
          "sessions_send cannot target the requester's own session; reply directly instead",
        )
      : ALLOWED;
  }

  const visibility: Visibility = normalizeVisibility(input.visibility) ?? "tree";
  if (targetAgent !== requesterAgent) {
    if (visibility !== "all") {
      return deny(
        CROSS_AGENT_CODE[visibility],
        `Session ${targetKey} belongs to agent "${targetAgent}": cross-agent access needs tools.sessions.visibility "all" (it is "${visibility}") and tools.agentToAgent enabled`,
      );
    }
    const policy = toPolicy(input.agentToAgent);
    if (!policy.enabled) {
      return deny(
        "agent_to_agent_disabled",
        `Cross-agent access from "${requesterAgent}" to "${targetAgent}" is disabled (set tools.agentToAgent.enabled to true)`,
      );
    }
    if (!policy.isAllowed(requesterAgent, targetAgent)) {
      return deny(
        "agent_to_agent_denied",
        `Cross-agent access from "${requesterAgent}" to "${targetAgent}" is not allowed (add both agent ids to tools.agentToAgent.allow)`,
      );
    }
    return ALLOWED;
  }
  if (visibility === "self") {
    return deny(
      "visibility_self",
      `Session ${targetKey} is not visible: tools.sessions.visibility is "self" (set it to "tree", "agent" or "all" to see other sessions)`,
    );
  }
  if (visibility === "tree") {
    const parent = input.spawnedBy === undefined ? null : parseSessionKey(input.spawnedBy);
    if (parent !== null && scoped(parent, requesterAgent).key === requesterKey) return ALLOWED;
    return deny(
      "visibility_tree",
      `Session ${targetKey} is not visible: tools.sessions.visibility is "tree" (only this session and the sub-agents it spawned; set it to "agent" or "all" to widen)`,
    );
  }
  return ALLOWED;
}
