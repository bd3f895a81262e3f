import { z } from "zod";
import { VISIBILITIES } from "./access.js";
import { resolvePingPongTurns } from "./agent-to-agent.js";
import { normalizeChannelId } from "./channels.js";
import { DM_SCOPES, normalizeAccountId, normalizeAgentId } from "./keys.js";
import { toSessionsError } from "./schema-errors.js";
import { SESSION_TOOL_NAMES } from "./tool-names.js";

const Decision = z.enum(["allow", "deny"]);

export const SendPolicyRuleSchema = z.strictObject({
  match: z
    .strictObject({
      channel: z.string().trim().min(1).optional(),
      chatType: z.enum(["direct", "dm", "group", "channel"]).optional(),
      keyPrefix: z.string().trim().min(1).optional(),
      rawKeyPrefix: z.string().trim().min(1).optional(),
    })
    .prefault({}),
  action: Decision,
});

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

export const SubagentDefaultsSchema = z.strictObject({
  runTimeoutSeconds: nonNegativeInt.default(0),
  archiveAfterMinutes: nonNegativeInt.default(60),
  maxSpawnDepth: nonNegativeInt.default(1),
  maxChildrenPerAgent: z.int().min(1).default(5),
  maxConcurrent: z.int().min(1).default(8),
  model: z.string().trim().min(1).optional(),
});

export const AgentConfigSchema = z.strictObject({
  id: agentId,
  name: z.string().trim().min(1).optional(),
  default: z.boolean().optional(),
  model: z.string().trim().min(1).optional(),
  sandboxed: z.boolean().optional(),
  subagents: z
    .strictObject({
      allowAgents: z.array(z.string().trim().min(1)).default([]),
      model: z.string().trim().min(1).optional(),
    })
    .prefault({}),
});

const ChannelConfigSchema = z.looseObject({
  threadBindings: ThreadBindingsOverrideSchema.optional(),
  accounts: z
    .record(z.string(), z.looseObject({ threadBindings: ThreadBindingsOverrideSchema.optional() }))
    .optional(),
});

/** The whole configuration the session tools read (SPEC sections 1–8), with every default filled in. */
export const SessionsConfigSchema = z
  .strictObject({
    session: z
      .strictObject({
        scope: z.enum(["per-sender", "global"]).default("per-sender"),
        mainKey: z
          .string()
          .trim()
          .toLowerCase()
          .regex(/^[^:\s]+$/, "must be one key segment (no ':' or spaces)")
          .default("main"),
        dmScope: z.enum(DM_SCOPES).default("main"),
        identityLinks: z.record(z.string(), z.array(z.string())).default({}),
        sendPolicy: SendPolicySchema.prefault({}),
        agentToAgent: z
          .strictObject({ maxPingPongTurns: z.unknown().optional().transform(resolvePingPongTurns) })
          .prefault({}),
        threadBindings: ThreadBindingsSchema.prefault({}),
      })
      .prefault({}),
    tools: z
      .strictObject({
        sessions: z.strictObject({ visibility: z.enum(VISIBILITIES).default("tree") }).prefault({}),
        agentToAgent: z
          .strictObject({
            enabled: z.boolean().default(false),
            allow: z.array(z.string().trim().min(1)).default([]),
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
            subagents: SubagentDefaultsSchema.prefault({}),
            sandbox: z
              .strictObject({ sessionToolsVisibility: z.enum(["spawned", "all"]).default("spawned") })
              .prefault({}),
          })
          .prefault({}),
        list: z.array(AgentConfigSchema).default([]),
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
  });

export type SessionsConfig = z.output<typeof SessionsConfigSchema>;
export type SessionsConfigInput = z.input<typeof SessionsConfigSchema>;
export type AgentConfig = z.output<typeof AgentConfigSchema>;
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

/** Thread-binding settings for a channel and account: session defaults, then channel, then account overrides. */
export function resolveThreadBindings(
  config: SessionsConfig,
  channel?: string,
  accountId?: string,
): ThreadBindingsConfig {
  // Config keys are matched the way ids are normalised (`Discord` ≡ `discord`, `Work Bot` ≡ `work-bot`).
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
