export {
  createDiscordAdapter,
  DISCORD_MAX_MESSAGE_LENGTH,
  type DiscordAdapter,
  type DiscordAdapterConfig,
  type DiscordInbound,
  parseDiscordTarget,
} from "./discord.js";
