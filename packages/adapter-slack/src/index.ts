export { toSessionsError as slackErrorToSessionsError } from "./errors.js";
export {
  chatTypeOf,
  type ResolveContext,
  type SlackChannelType,
  type SlackInbound,
  type SlackMessageEvent,
} from "./inbound.js";
export { escapeMrkdwn, unescapeMrkdwn } from "./mrkdwn.js";
export {
  createSlackAdapter,
  type SlackAdapter,
  type SlackAdapterConfig,
  slackChannelId,
} from "./slack.js";
export { SLACK_MAX_MESSAGE_LENGTH, splitForSlack } from "./split.js";
export type { SlackBotToken, SlackWorkspace } from "./workspaces.js";
