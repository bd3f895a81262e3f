export { toSessionsError as slackErrorToSessionsError } from "./errors.js";
export {
  chatTypeOf,
  type ResolveContext,
  type SlackChannelType,
  type SlackInbound,
  type SlackMessageEvent,
} from "./inbound.js";
export { escapeMrkdwn, SLACK_MAX_MESSAGE_LENGTH, splitForSlack, unescapeMrkdwn } from "./mrkdwn.js";
export {
  createSlackAdapter,
  type SlackAdapter,
  type SlackAdapterConfig,
  slackChannelId,
} from "./slack.js";
export type { SlackBotToken, SlackWorkspace } from "./workspaces.js";
