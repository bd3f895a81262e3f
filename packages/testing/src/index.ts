export {
  type DiscordFixtureName,
  discordMessage,
  discordSnowflake,
  discordTimestamp,
} from "./discord-fixtures.js";
export {
  ConditionTimeoutError,
  EVENTUALLY_TIMEOUT_MS,
  type EventuallyOptions,
  eventually,
} from "./eventually.js";
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
} from "./fake-discord/index.js";
export {
  createFakeMatrixHomeserver,
  type FakeMatrixError,
  type FakeMatrixHomeserver,
  type MatrixCall,
  type MatrixSentEvent,
} from "./fake-matrix.js";
export type { FakeMatrixRoomOptions, MatrixStoredEvent } from "./fake-matrix-world.js";
export {
  createFakeSlack,
  type FakeSlack,
  type FakeSlackOptions,
  type SlackCall,
  type SlackFailure,
  type SlackPostedMessage,
} from "./fake-slack.js";
export {
  postSlackEvent,
  type SlackEnvelope,
  type SocketModeHub,
  signSlackRequest,
} from "./fake-slack-events.js";
export {
  createFakeTelegramApi,
  type FakeTelegramApi,
  type FakeTelegramError,
  type FakeTelegramMessage,
  type HeldTelegramCall,
  type TelegramCall,
} from "./fake-telegram.js";
export {
  type MatrixEventInput,
  type MatrixFixtureName,
  matrixEvent,
  matrixThreadRelation,
} from "./matrix-fixtures.js";
export type { MatrixShownMessage } from "./matrix-shown.js";
export type { MaskOptions } from "./replay/ids.js";
export {
  type NormalizeOptions,
  normalizeRecording,
  type RecordedRequest,
  type RecordedTurn,
  readRecording,
} from "./replay/recording.js";
export type { ReplayedRequest } from "./replay/requests.js";
export {
  createReplayRunner,
  type ReplayEvent,
  type ReplayRequest,
  type ReplayRunner,
  type ReplayTool,
} from "./replay/runner.js";
export {
  defaultSlackTeams,
  type FakeSlackChannel,
  type FakeSlackTeam,
  type FakeSlackUser,
  SLACK_APP,
  type SlackFixtureName,
  slackEvent,
  slackTs,
} from "./slack-fixtures.js";
export {
  deliveredReply,
  type RepliesDeliveries,
  type RepliesGateway,
  type RepliesSessions,
  type WritingTurn,
  writeWords,
} from "./streamed-replies.js";
export { type TelegramFixtureName, telegramUpdate } from "./telegram-fixtures.js";
