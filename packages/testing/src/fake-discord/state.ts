// The fake Discord's live state: users, members, channels and threads, messages; how a sent message, a new
// thread and the GUILD_CREATE payload look; and what the fake learns from the events a test dispatches.
import { discordSnowflake, discordTimestamp } from "../discord-fixtures.js";
import { guildInfo as guildData, guildRoles } from "./guild-data.js";
import type { DiscordCall, DiscordChannelData, DiscordUserData } from "./types.js";
import {
  CHANNEL_TYPES,
  error,
  IDS,
  invalidForm,
  type Json,
  member,
  type RestResult,
  THREAD_TYPES,
  unknownChannel,
  user,
} from "./wire.js";

/** The state of one fake Discord, shared by its REST routes and its gateway socket. */
export type DiscordState = ReturnType<typeof createDiscordState>;

/** One guild (category, "general", forum "ideas", thread "release-planning"), a DM with Alice, three users. */
export function createDiscordState() {
  const channels = new Map<string, DiscordChannelData>();
  const messages = new Map<string, Json>();
  const createdAt = "2024-11-01T12:00:00.000000+00:00";

  const botUser: DiscordUserData = { ...user(IDS.bot, "Sessions Test Bot", null, "4821"), bot: true };
  const alice = user(IDS.alice, "alice_example", "Alice");
  const otherBot: DiscordUserData = { ...user(IDS.otherBot, "CI Bot", null, "7731"), bot: true };
  const users = new Map([botUser, alice, otherBot].map((u) => [u.id, u]));
  const members = new Map<string, Json>([
    [botUser.id, member(botUser, [IDS.botRole], createdAt)],
    [alice.id, member(alice, [], "2024-11-02T10:00:00.000000+00:00")],
    [otherBot.id, member(otherBot, [], "2024-11-03T08:30:00.000000+00:00")],
  ]);
  const roles = guildRoles();
  const guildInfo = guildData();

  const guildChannel = (id: string, type: number, name: string, position: number, extra: Json = {}) =>
    ({
      id,
      type,
      guild_id: IDS.guild,
      name,
      position,
      flags: 0,
      parent_id: IDS.category,
      permission_overwrites: [],
      nsfw: false,
      ...extra,
    }) satisfies DiscordChannelData;
  const category = guildChannel(IDS.category, CHANNEL_TYPES.category, "Text Channels", 0, {
    parent_id: null,
  });
  const general = guildChannel(IDS.general, CHANNEL_TYPES.text, "general", 0, {
    topic: "Day-to-day chat",
    last_message_id: null,
    last_pin_timestamp: null,
    rate_limit_per_user: 0,
    default_auto_archive_duration: 1440,
    default_thread_rate_limit_per_user: 0,
  });
  const forum = guildChannel(IDS.forum, CHANNEL_TYPES.forum, "ideas", 1, {
    topic: "One post per idea",
    last_message_id: null,
    rate_limit_per_user: 0,
    default_auto_archive_duration: 4320,
    default_thread_rate_limit_per_user: 0,
    default_reaction_emoji: null,
    default_sort_order: null,
    default_forum_layout: 0,
    available_tags: [
      { id: "1300000000000000310", name: "feature", moderated: false, emoji_id: null, emoji_name: null },
    ],
    template: "",
  });
  const thread = newThread(general, "release-planning", {
    id: IDS.thread,
    owner_id: IDS.alice,
    message_count: 4,
    total_message_sent: 4,
    member_count: 2,
    includeMember: false,
  });
  const dmChannel: DiscordChannelData = {
    id: IDS.dm,
    type: CHANNEL_TYPES.dm,
    last_message_id: null,
    flags: 0,
    recipients: [alice],
  };
  for (const c of [category, general, forum, thread, dmChannel]) channels.set(c.id, c);

  function newThread(
    parent: DiscordChannelData,
    name: string,
    opts: {
      id?: string | undefined;
      type?: number | undefined;
      owner_id?: string | undefined;
      autoArchiveDuration?: number | undefined;
      rateLimitPerUser?: number | undefined;
      appliedTags?: unknown;
      invitable?: unknown;
      message_count?: number | undefined;
      total_message_sent?: number | undefined;
      member_count?: number | undefined;
      includeMember?: boolean | undefined;
    } = {},
  ): DiscordChannelData {
    const id = opts.id ?? discordSnowflake();
    const type = opts.type ?? CHANNEL_TYPES.publicThread;
    const now = discordTimestamp();
    return {
      id,
      type,
      guild_id: IDS.guild,
      parent_id: parent.id,
      owner_id: opts.owner_id ?? IDS.bot,
      name,
      last_message_id: null,
      rate_limit_per_user: opts.rateLimitPerUser ?? 0,
      flags: 0,
      message_count: opts.message_count ?? 0,
      total_message_sent: opts.total_message_sent ?? 0,
      member_count: opts.member_count ?? 1,
      thread_metadata: {
        archived: false,
        archive_timestamp: now,
        auto_archive_duration:
          opts.autoArchiveDuration ?? (parent.default_auto_archive_duration as number | undefined) ?? 1440,
        locked: false,
        create_timestamp: now,
        ...(type === CHANNEL_TYPES.privateThread ? { invitable: opts.invitable ?? true } : {}),
      },
      ...(parent.type === CHANNEL_TYPES.forum ? { applied_tags: opts.appliedTags ?? [] } : {}),
      ...(opts.includeMember === false
        ? {}
        : {
            member: { id, user_id: IDS.bot, join_timestamp: now, flags: 1, muted: false, mute_config: null },
          }),
    };
  }

  function isThread(c: DiscordChannelData): boolean {
    return THREAD_TYPES.has(c.type);
  }

  function guildCreatePayload(): Json {
    const all = [...channels.values()].filter((c) => c.guild_id === IDS.guild);
    const active = all.filter(
      (c) => isThread(c) && !(c.thread_metadata as { archived?: boolean | undefined }).archived,
    );
    return {
      ...guildInfo,
      roles,
      unavailable: false,
      lazy: true,
      large: false,
      joined_at: createdAt,
      member_count: members.size,
      members: [...members.values()],
      channels: all.filter((c) => !isThread(c)).map(({ guild_id: _omit, ...c }) => c),
      threads: active,
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
      activity_instances: [],
      version: Date.now(),
    };
  }

  // --- messages --------------------------------------------------------------------------------------------------

  function gatewayMessage(message: Json, channel: DiscordChannelData): Json {
    if (channel.guild_id === undefined) return { ...message, channel_type: channel.type };
    const { user: _user, ...botMember } = members.get(IDS.bot) ?? {};
    return { ...message, guild_id: channel.guild_id, member: botMember, channel_type: channel.type };
  }

  function mentionsIn(content: string): Json[] {
    const ids = new Set([...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1] ?? ""));
    return [...ids].flatMap((id) => {
      const u = users.get(id);
      return u === undefined ? [] : [u];
    });
  }

  function createMessage(
    channel: DiscordChannelData,
    body: Json,
    files: DiscordCall["files"],
    id: string = discordSnowflake(),
  ): RestResult | Json {
    const content = typeof body.content === "string" ? body.content : "";
    const embeds = Array.isArray(body.embeds) ? body.embeds : [];
    const components = Array.isArray(body.components) ? body.components : [];
    const hasSticker = Array.isArray(body.sticker_ids) && body.sticker_ids.length > 0;
    if (
      content === "" &&
      embeds.length === 0 &&
      components.length === 0 &&
      !files?.length &&
      !hasSticker &&
      !body.poll
    ) {
      return error(400, 50006, "Cannot send an empty message");
    }
    if (content.length > 2000) {
      return invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
    }
    const reference = body.message_reference as
      | { message_id?: string | undefined; channel_id?: string | undefined }
      | undefined;
    let referenced: Json | null = null;
    if (reference?.message_id !== undefined) {
      referenced = messages.get(reference.message_id) ?? null;
      const failIfMissing = (body.message_reference as { fail_if_not_exists?: boolean | undefined })
        .fail_if_not_exists;
      if (referenced === null && failIfMissing !== false) {
        return invalidForm("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message");
      }
    }
    const message: Json = {
      type: reference === undefined ? 0 : 19,
      channel_id: channel.id,
      content,
      attachments: (files ?? []).map((f) => {
        const attachmentId = discordSnowflake();
        const url = `https://cdn.discordapp.com/attachments/${channel.id}/${attachmentId}/${f.name}`;
        return {
          id: attachmentId,
          filename: f.name,
          size: f.size,
          url,
          proxy_url: url,
          content_type: f.contentType,
        };
      }),
      embeds,
      mentions: mentionsIn(content),
      mention_roles: [],
      pinned: false,
      mention_everyone: false,
      tts: body.tts === true,
      timestamp: discordTimestamp(),
      edited_timestamp: null,
      flags: typeof body.flags === "number" ? body.flags : 0,
      components,
      id,
      author: botUser,
      ...(body.nonce === undefined ? {} : { nonce: body.nonce }),
      ...(reference === undefined
        ? {}
        : {
            message_reference: {
              type: 0,
              channel_id: reference.channel_id ?? channel.id,
              message_id: reference.message_id,
              ...(channel.guild_id === undefined ? {} : { guild_id: channel.guild_id }),
            },
            referenced_message: referenced === null ? null : stripGatewayFields(referenced),
          }),
    };
    messages.set(id, gatewayMessage(message, channel));
    channel.last_message_id = id;
    if (isThread(channel)) {
      channel.message_count = ((channel.message_count as number | undefined) ?? 0) + 1;
      channel.total_message_sent = ((channel.total_message_sent as number | undefined) ?? 0) + 1;
    }
    return message;
  }

  function stripGatewayFields(message: Json): Json {
    const { guild_id: _g, member: _m, channel_type: _t, ...rest } = message;
    return rest;
  }
  function learn(event: string, data: unknown) {
    if (typeof data !== "object" || data === null) return;
    const d = data as Json;
    switch (event) {
      case "MESSAGE_CREATE": {
        const channelId = String(d.channel_id);
        if (!channels.has(channelId) && d.guild_id === undefined && d.author !== undefined) {
          channels.set(channelId, {
            id: channelId,
            type: CHANNEL_TYPES.dm,
            last_message_id: d.id,
            flags: 0,
            recipients: [d.author],
          });
        }
        const channel = channels.get(channelId);
        if (channel !== undefined) channel.last_message_id = d.id;
        messages.set(String(d.id), structuredClone(d));
        break;
      }
      case "MESSAGE_DELETE":
        messages.delete(String(d.id));
        break;
      case "CHANNEL_CREATE":
      case "THREAD_CREATE":
        if (typeof d.id === "string" && typeof d.type === "number") {
          const { newly_created: _n, ...channel } = d;
          channels.set(d.id, structuredClone(channel) as DiscordChannelData);
        }
        break;
      case "CHANNEL_UPDATE":
      case "THREAD_UPDATE": {
        const existing = channels.get(String(d.id));
        if (existing !== undefined) Object.assign(existing, structuredClone(d));
        break;
      }
      case "CHANNEL_DELETE":
      case "THREAD_DELETE":
        channels.delete(String(d.id));
        break;
    }
  }

  function requireChannel(id: string): DiscordChannelData | RestResult {
    return channels.get(id) ?? unknownChannel();
  }
  function publicChannel(c: DiscordChannelData): DiscordChannelData {
    if (!isThread(c)) return c;
    const { member: _member, ...rest } = c;
    return rest as DiscordChannelData;
  }
  return {
    createdAt,
    channels,
    messages,
    users,
    members,
    roles,
    guildInfo,
    botUser,
    alice,
    otherBot,
    general,
    forum,
    thread,
    dmChannel,
    newThread,
    isThread,
    guildCreatePayload,
    mentionsIn,
    createMessage,
    stripGatewayFields,
    learn,
    requireChannel,
    publicChannel,
  };
}
