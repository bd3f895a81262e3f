import { z } from "zod";
import { VISIBILITIES } from "./access.js";
import { DEFAULT_MAX_HOPS, resolvePingPongTurns } from "./agent-to-agent.js";
import { BudgetSchema } from "./budget.js";
import { normalizeChannelId } from "./channels.js";
import { DM_SCOPES, normalizeAccountId, normalizeAgentId } from "./keys.js";
import { QUEUE_MODES } from "./queue-mode.js";
import { RemoteAgentConfigSchema } from "./remote-agents.js";
import { toSessionsError } from "./schema-errors.js";
import { STREAMING_MODES, type StreamingMode } from "./streaming.js";
import { SESSION_TOOL_NAMES } from "./tool-names.js";

/**
 * An enum config value, read as the reference reads it: trimmed and case-insensitive (`" ALL "` → `"all"`). The
 * input type stays the canonical literals, so typed configs still get completion and typo checks.
 */
function choice<const T extends readonly [string, ...string[]]>(values: T): z.ZodType<T[number], T[number]> {
  return z.preprocess(
    (value) => (typeof value === "string" ? value.trim().toLowerCase() : value),
    z.enum(values),
  ) as unknown as z.ZodType<T[number], T[number]>;
}

const Decision = choice(["allow", "deny"]);

/** One `session.sendPolicy.rules[]` entry: a match and an action. */
export const SendPolicyRuleSchema = z.strictObject({
  match: z
    .strictObject({
      channel: z.string().trim().min(1).optional(),
      chatType: choice(["direct", "dm", "group", "channel"]).optional(),
      keyPrefix: z.string().trim().min(1).optional(),
      rawKeyPrefix: z.string().trim().min(1).optional(),
    })
    .prefault({}),
  action: Decision,
});

/** `session.sendPolicy`: rules and a default. */
export const SendPolicySchema = z.strictObject({
  rules: z.array(SendPolicyRuleSchema).default([]),
  default: Decision.default("allow"),
});

const hours = z.number().finite().min(0);

/** Thread-binding settings as they may be overridden per channel and account (no defaults). */
export const ThreadBindingsOverrideSchema = z.strictObject({
  enabled: z.boolean().optional(),
  idleHours: hours.optional(),
  maxAgeHours: hours.optional(),
});

/** `session.threadBindings`: whether sub-agents may bind threads, and when bindings expire. */
export const ThreadBindingsSchema = z.strictObject({
  enabled: z.boolean().default(true),
  idleHours: hours.default(24),
  maxAgeHours: hours.default(0),
});

const agentId = z
  .string()
  .trim()
  .min(1)
  .transform((id) => normalizeAgentId(id));
const nonNegativeInt = z.int().min(0);

/** `agents.defaults.subagents`: timeouts, archive delay, depth and concurrency limits of sub-agents. */
export const SubagentDefaultsSchema = z.strictObject({
  runTimeoutSeconds: nonNegativeInt.default(0),
  archiveAfterMinutes: nonNegativeInt.default(60),
  maxSpawnDepth: nonNegativeInt.default(1),
  maxChildrenPerAgent: z.int().min(1).default(5),
  maxConcurrent: z.int().min(1).default(8),
  model: z.string().trim().min(1).optional(),
});

/** One `agents.list[]` entry: an agent's id, name and sub-agent settings. */
export const AgentConfigSchema = z.strictObject({
  id: agentId,
  name: z.string().trim().min(1).optional(),
  default: z.boolean().optional(),
  model: z.string().trim().min(1).optional(),
  sandboxed: z.boolean().optional(),
  /** This agent's own `session.agentToAgent.maxHops` for the messages and spawns its runs send. */
  maxHops: z.int().min(1).max(100).optional(),
  /** What this agent's sessions do with a message that arrives while they are busy (default: the agents' default). */
  queueMode: choice(QUEUE_MODES).optional(),
  /** The budget of the agent trees this agent's sessions start (default: the agents' default; see `BudgetSchema`). */
  budget: BudgetSchema.optional(),
  subagents: z
    .strictObject({
      allowAgents: z.array(z.string().trim().min(1)).default([]),
      model: z.string().trim().min(1).optional(),
    })
    .prefault({}),
});

/** `streaming` of a channel or account: how replies stream into its chats (see `StreamingMode`). */
const streaming = choice(STREAMING_MODES).optional();

const ChannelConfigSchema = z.looseObject({
  threadBindings: ThreadBindingsOverrideSchema.optional(),
  streaming,
  accounts: z
    .record(z.string(), z.looseObject({ threadBindings: ThreadBindingsOverrideSchema.optional(), streaming }))
    .optional(),
});

/** `tools.agentToAgent.maxBroadcastTargets` when unset. */
export const DEFAULT_MAX_BROADCAST_TARGETS = 20;

/** The whole configuration the session tools read (SPEC sections 1–8), with every default filled in. */
export const SessionsConfigSchema = z
  .strictObject({
    session: z
      .strictObject({
        scope: choice(["per-sender", "global"]).default("per-sender"),
        mainKey: z
          .string()
          .trim()
          .toLowerCase()
          .regex(/^[^:\s]+$/, "must be one key segment (no ':' or spaces)")
          .default("main"),
        dmScope: choice(DM_SCOPES).default("main"),
        identityLinks: z.record(z.string(), z.array(z.string())).default({}),
        sendPolicy: SendPolicySchema.prefault({}),
        agentToAgent: z
          .strictObject({
            maxPingPongTurns: z.unknown().optional().transform(resolvePingPongTurns),
            /**
             * How many messages deep a tree of runs may go from the user's message: a `sessions_send` or
             * `sessions_spawn` that would start a run further from it is refused (default 5).
             */
            maxHops: z.int().min(1).max(100).default(DEFAULT_MAX_HOPS),
          })
          .prefault({}),
        threadBindings: ThreadBindingsSchema.prefault({}),
      })
      .prefault({}),
    tools: z
      .strictObject({
        sessions: z.strictObject({ visibility: choice(VISIBILITIES).default("tree") }).prefault({}),
        agentToAgent: z
          .strictObject({
            enabled: z.boolean().default(false),
            allow: z.array(z.string().trim().min(1)).default([]),
            /** The most sessions one `sessions_send` broadcast (by label) may reach; more matching is refused. */
            maxBroadcastTargets: z.int().min(1).max(1000).default(DEFAULT_MAX_BROADCAST_TARGETS),
          })
          .prefault({}),
        subagents: z
          .strictObject({
            tools: z
              .strictObject({
                allow: z.array(z.string().trim().min(1)).optional(),
                deny: z.array(z.string().trim().min(1)).default([...SESSION_TOOL_NAMES]),
              })
              .prefault({}),
          })
          .prefault({}),
      })
      .prefault({}),
    agents: z
      .strictObject({
        defaults: z
          .strictObject({
            model: z.string().trim().min(1).optional(),
            /** What a busy session does with a user's message (`followup` when unset). */
            queueMode: choice(QUEUE_MODES).optional(),
            /** The budget of every agent tree a user's request starts, unless its request, session or agent has one. */
            budget: BudgetSchema.optional(),
            subagents: SubagentDefaultsSchema.prefault({}),
            sandbox: z
              .strictObject({ sessionToolsVisibility: choice(["spawned", "all"]).default("spawned") })
              .prefault({}),
          })
          .prefault({}),
        list: z.array(AgentConfigSchema).default([]),
        /** Agents behind other servers, reached over A2A (see `RemoteAgentConfigSchema`). */
        remotes: z.array(RemoteAgentConfigSchema).default([]),
      })
      .prefault({}),
    channels: z.record(z.string(), ChannelConfigSchema).default({}),
  })
  .superRefine((config, ctx) => {
    const seen = new Map<string, number>();
    config.agents.list.forEach((agent, index) => {
      const first = seen.get(agent.id);
      if (first !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["agents", "list", index, "id"],
          message: `duplicate agent id "${agent.id}" (also agents.list[${first}].id)`,
        });
      } else seen.set(agent.id, index);
    });
    const remotes = new Map<string, number>();
    config.agents.remotes.forEach((remote, index) => {
      const first = remotes.get(remote.id);
      const local = seen.has(remote.id);
      if (first !== undefined || local) {
        ctx.addIssue({
          code: "custom",
          path: ["agents", "remotes", index, "id"],
          message: local
            ? `remote agent id "${remote.id}" is also an agent of agents.list`
            : `duplicate remote agent id "${remote.id}" (also agents.remotes[${first}].id)`,
        });
      } else remotes.set(remote.id, index);
    });
  });

/** The configuration after parsing: every default filled in. */
export type SessionsConfig = z.output<typeof SessionsConfigSchema>;
/** The configuration as you write it: everything optional. */
export type SessionsConfigInput = z.input<typeof SessionsConfigSchema>;
/** One parsed `agents.list[]` entry. */
export type AgentConfig = z.output<typeof AgentConfigSchema>;
/** Parsed `session.threadBindings`. */
export type ThreadBindingsConfig = z.output<typeof ThreadBindingsSchema>;

/**
 * Validates a config and fills in every default.
 * @throws SessionsError `invalid_config` whose `field` is the offending path (e.g. `tools.sessions.visibility`).
 */
export function parseSessionsConfig(input: unknown = {}): SessionsConfig {
  const result = SessionsConfigSchema.safeParse(input ?? {});
  if (!result.success) throw toSessionsError(result.error, "invalid_config", "Invalid sessions config");
  return result.data;
}

/** The configured agent with that id, if any. */
export function findAgentConfig(config: SessionsConfig, agentId: string): AgentConfig | undefined {
  const id = normalizeAgentId(agentId);
  return config?.agents?.list?.find((agent) => agent.id === id);
}

/** The default agent: the one marked `default`, else the first listed, else `main`. */
export function defaultAgentId(config: SessionsConfig): string {
  const list = config?.agents?.list ?? [];
  return (list.find((a) => a.default === true) ?? list[0])?.id ?? "main";
}

/** A channel's config and its account's, matched the way ids are normalised (`Discord` ≡ `discord`, `Work Bot` ≡ `work-bot`). */
function channelSettings(config: SessionsConfig, channel?: string, accountId?: string) {
  const channelId = normalizeChannelId(channel);
  const channelConfig = Object.entries(config?.channels ?? {}).find(
    ([k]) => normalizeChannelId(k) === channelId,
  )?.[1];
  const accountKey = typeof accountId === "string" ? normalizeAccountId(accountId) : undefined;
  const accountConfig =
    accountKey === undefined
      ? undefined
      : Object.entries(channelConfig?.accounts ?? {}).find(
          ([k]) => normalizeAccountId(k) === accountKey,
        )?.[1];
  return { channelConfig, accountConfig };
}

/** Thread-binding settings for a channel and account: session defaults, then channel, then account overrides. */
export function resolveThreadBindings(
  config: SessionsConfig,
  channel?: string,
  accountId?: string,
): ThreadBindingsConfig {
  const { channelConfig, accountConfig } = channelSettings(config, channel, accountId);
  const merged: ThreadBindingsConfig = {
    ...(config?.session?.threadBindings ?? ThreadBindingsSchema.parse({})),
  };
  for (const override of [channelConfig?.threadBindings, accountConfig?.threadBindings]) {
    if (override === undefined) continue;
    if (override.enabled !== undefined) merged.enabled = override.enabled;
    if (override.idleHours !== undefined) merged.idleHours = override.idleHours;
    if (override.maxAgeHours !== undefined) merged.maxAgeHours = override.maxAgeHours;
  }
  return merged;
}

/**
 * How replies stream into a channel's chats for an account: the account's `streaming`, else the channel's, else
 * `undefined` (then the adapter's own default, `ChannelStreamV1.defaultMode`).
 */
export function resolveStreaming(
  config: SessionsConfig,
  channel?: string,
  accountId?: string,
): StreamingMode | undefined {
  const { channelConfig, accountConfig } = channelSettings(config, channel, accountId);
  return accountConfig?.streaming ?? channelConfig?.streaming;
}
