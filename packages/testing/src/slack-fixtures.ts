import appMention from "./fixtures/slack/app-mention.json";
import channelArchive from "./fixtures/slack/channel-archive.json";
import channelMention from "./fixtures/slack/channel-mention.json";
import channelMessage from "./fixtures/slack/channel-message.json";
import imMessage from "./fixtures/slack/im-message.json";
import messageChanged from "./fixtures/slack/message-changed.json";
import mpimMessage from "./fixtures/slack/mpim-message.json";
import otherBotMessage from "./fixtures/slack/other-bot-message.json";
import ownMessage from "./fixtures/slack/own-message.json";
import privateChannelMessage from "./fixtures/slack/private-channel-message.json";
import threadReply from "./fixtures/slack/thread-reply.json";

/** A conversation in a fake workspace. */
export interface FakeSlackChannel {
  id: string;
  /** Channel name without `#` (DMs have none). */
  name?: string | undefined;
  kind: "public" | "private" | "im" | "mpim";
  /** Whether the bot is in it (default true): posting elsewhere fails with `not_in_channel`. */
  member?: boolean | undefined;
  archived?: boolean | undefined;
  /** `im` only: the person on the other side. */
  user?: string | undefined;
}

/** A person (or bot) in a fake workspace, as `users.info` answers for them. */
export interface FakeSlackUser {
  /** `U…` user id. */
  id: string;
  /** The handle (`alice`). */
  name: string;
  /** The display name the adapter uses for session names (`Alice Example`). */
  realName: string;
  /** A bot user (`is_bot`). */
  isBot?: boolean | undefined;
}

/** One workspace (team) the fake Slack app is installed in. */
export interface FakeSlackTeam {
  id: string;
  name: string;
  domain: string;
  botToken: string;
  botUserId: string;
  botId: string;
  users: FakeSlackUser[];
  channels: FakeSlackChannel[];
}

/** The app both recorded workspaces installed: its id, Socket Mode token and signing secret. */
export const SLACK_APP = {
  appId: "A0SESSIONS",
  appToken: "xapp-1-A0SESSIONS-0000000000-test",
  signingSecret: "8f742231b10e8888abcd99yyyzzz85a5",
} as const;

/** The two workspaces the recorded payloads come from: Acme (first, the default) and Globex. */
export function defaultSlackTeams(): FakeSlackTeam[] {
  return [
    {
      id: "T0ACME001",
      name: "Acme",
      domain: "acme-example",
      botToken: "xoxb-acme-0000-test",
      botUserId: "U0BOTACME",
      botId: "B0BOTACME",
      users: [
        { id: "U0ALICE01", name: "alice", realName: "Alice Example" },
        { id: "U0BOB0001", name: "bob", realName: "Bob Example" },
        { id: "U0BOTACME", name: "sessions", realName: "Sessions", isBot: true },
      ],
      channels: [
        { id: "C0GENERAL", name: "general", kind: "public" },
        { id: "C0PRIVATE", name: "ops-private", kind: "private" },
        { id: "C0RANDOM1", name: "random", kind: "public", member: false },
        { id: "C0OLDNEWS", name: "old-news", kind: "public", archived: true },
        { id: "D0ALICEDM", kind: "im", user: "U0ALICE01" },
        { id: "G0MPIM001", name: "mpdm-alice--bob--sessions-1", kind: "mpim" },
      ],
    },
    {
      id: "T0GLOBEX1",
      name: "Globex",
      domain: "globex-example",
      botToken: "xoxb-globex-0000-test",
      botUserId: "U0BOTGLBX",
      botId: "B0BOTGLBX",
      users: [
        { id: "U0CAROL01", name: "carol", realName: "Carol Example" },
        { id: "U0BOTGLBX", name: "sessions", realName: "Sessions", isBot: true },
      ],
      channels: [
        { id: "C0GLXGENL", name: "general", kind: "public" },
        { id: "D0CAROLDM", kind: "im", user: "U0CAROL01" },
      ],
    },
  ];
}

/** Recorded, sanitised Events API payloads (`event_callback` bodies) from the Acme workspace. */
const FIXTURES = {
  "channel-message": channelMessage,
  "channel-mention": channelMention,
  "app-mention": appMention,
  "thread-reply": threadReply,
  "private-channel-message": privateChannelMessage,
  "im-message": imMessage,
  "mpim-message": mpimMessage,
  "other-bot-message": otherBotMessage,
  "own-message": ownMessage,
  "message-changed": messageChanged,
  "channel-archive": channelArchive,
} as const;

/**
 * The recorded Events API payloads {@link slackEvent} can build (`channel-message`, `app-mention`, `im-message`,
 * …).
 */
export type SlackFixtureName = keyof typeof FIXTURES;

let sequence = 0;

/** A fresh, unique Slack timestamp (`seconds.micros`), increasing across calls. */
export function slackTs(): string {
  sequence++;
  return `${1763810000 + sequence}.${String(sequence).padStart(6, "0")}`;
}

/**
 * A fresh copy of a recorded `event_callback` body with a new `event_id` and message `ts`, optionally moved to
 * another recorded workspace (`team`: ids, the bot's user id and mentions of it rewritten) and with event fields
 * overridden (`text`, `channel`, `user`, `thread_ts`, …).
 */
export function slackEvent(
  name: SlackFixtureName,
  overrides: { team?: string | undefined; event?: Record<string, unknown> | undefined } = {},
): Record<string, unknown> {
  const body = structuredClone(FIXTURES[name]) as Record<string, unknown> & {
    event: Record<string, unknown>;
    authorizations: { team_id: string; user_id: string }[];
  };
  const ts = slackTs();
  const event = body.event;
  if (typeof event.ts === "string") event.ts = ts;
  event.event_ts = ts;
  body.event_id = `Ev${String(sequence).padStart(10, "0")}`;
  body.event_time = Number(ts.split(".")[0]);
  const teams = defaultSlackTeams();
  const [acme] = teams as [FakeSlackTeam];
  const team = overrides.team === undefined ? acme : teams.find((t) => t.id === overrides.team);
  if (team === undefined) throw new Error(`slackEvent: no recorded workspace ${overrides.team}`);
  if (team.id !== acme.id) {
    body.team_id = team.id;
    body.context_team_id = team.id;
    for (const auth of body.authorizations) {
      auth.team_id = team.id;
      auth.user_id = team.botUserId;
    }
    if ("team" in event) event.team = team.id;
    if (typeof event.text === "string") event.text = event.text.replaceAll(acme.botUserId, team.botUserId);
    if (event.user === acme.botUserId) event.user = team.botUserId;
    if (event.bot_id === acme.botId) event.bot_id = team.botId;
  }
  Object.assign(event, overrides.event ?? {});
  if (Array.isArray(event.blocks) && overrides.event?.text !== undefined) delete event.blocks;
  return body;
}
