import dmText from "./fixtures/discord/dm-text.json";
import guildMention from "./fixtures/discord/guild-mention.json";
import guildReply from "./fixtures/discord/guild-reply.json";
import guildText from "./fixtures/discord/guild-text.json";
import otherBotText from "./fixtures/discord/other-bot-text.json";
import threadText from "./fixtures/discord/thread-text.json";

/**
 * Recorded, sanitised gateway `MESSAGE_CREATE` payloads (ids and names replaced). Their ids match the world of
 * `createFakeDiscordApi`: guild `1300000000000000100`, text channel "general" `…200`, thread `…400`, DM channel
 * `…500`, bot user `…001`, human author "alice_example" `1200000000000000001`, other bot "CI Bot" `…002`.
 */
const FIXTURES = {
  /** A human's message in the text channel "general". */
  "guild-text": guildText,
  /** A human's message in "general" that @mentions the bot (`mentions` holds the bot user). */
  "guild-mention": guildMention,
  /** A human's reply (type 19) to one of the bot's messages in "general", with `referenced_message`. */
  "guild-reply": guildReply,
  /** A human's message in the public thread "release-planning" (channel_id = the thread id, channel_type 11). */
  "thread-text": threadText,
  /** A direct message: no `guild_id`, no `member`, `channel_type` 1 (discord.js needs `Partials.Channel`). */
  "dm-text": dmText,
  /** A message from another bot ("CI Bot", `author.bot` true) in "general". */
  "other-bot-text": otherBotText,
} as const;

/** The name of a recorded Discord message (`guild-text`, `thread-text`, `dm-text`, …). */
export type DiscordFixtureName = keyof typeof FIXTURES;

const DISCORD_EPOCH = 1_420_070_400_000n;
let increment = 0;

/** A fresh Discord snowflake (as a string) for `timestamp` (default now); unique within the process. */
export function discordSnowflake(timestamp: number = Date.now()): string {
  increment = (increment + 1) % 4096;
  return (((BigInt(timestamp) - DISCORD_EPOCH) << 22n) | (1n << 17n) | BigInt(increment)).toString();
}

/** Discord's timestamp format: `2025-11-20T09:14:03.512000+00:00`. */
export function discordTimestamp(date: Date = new Date()): string {
  return date.toISOString().replace(/Z$/, "000+00:00");
}

/**
 * A fresh copy of a recorded `MESSAGE_CREATE` payload with a new snowflake `id` (and `timestamp`/`nonce` to
 * match), with top-level fields overridden (`content`, `channel_id`, `author`, `message_reference`, …). Feed it
 * to `fake.dispatch("MESSAGE_CREATE", …)`.
 */
export function discordMessage(
  name: DiscordFixtureName,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const base = structuredClone(FIXTURES[name]) as Record<string, unknown>;
  const now = Date.now();
  const id = discordSnowflake(now);
  return {
    ...base,
    id,
    timestamp: discordTimestamp(new Date(now)),
    ...("nonce" in base ? { nonce: discordSnowflake(now) } : {}),
    ...overrides,
  };
}
