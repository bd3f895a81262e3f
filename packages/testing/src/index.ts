export {
  type DiscordFixtureName,
  discordMessage,
  discordSnowflake,
  discordTimestamp,
} from "./discord-fixtures.js";
export {
  createFakeDiscordApi,
  type DiscordCall,
  type DiscordChannelData,
  type DiscordFailure,
  type DiscordRouteMatcher,
  type DiscordUserData,
  type FakeDiscordApi,
  type FakeDiscordGuild,
  type FakeDiscordOptions,
} from "./fake-discord.js";
export {
  createFakeTelegramApi,
  type FakeTelegramApi,
  type FakeTelegramError,
  type TelegramCall,
} from "./fake-telegram.js";
export { type TelegramFixtureName, telegramUpdate } from "./telegram-fixtures.js";
