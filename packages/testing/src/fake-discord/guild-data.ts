// The fake guild's fixed data: its roles, the guild object and the bot's application, as Discord sends them.
import type { DiscordUserData } from "./types.js";
import { BOT_PERMISSIONS, EVERYONE_PERMISSIONS, IDS, type Json } from "./wire.js";

/** The guild's roles: @everyone and the bot's managed role. */
export function guildRoles(): Json[] {
  return [
    {
      id: IDS.guild,
      name: "@everyone",
      description: null,
      permissions: EVERYONE_PERMISSIONS,
      position: 0,
      color: 0,
      colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
      hoist: false,
      managed: false,
      mentionable: false,
      icon: null,
      unicode_emoji: null,
      flags: 0,
    },
    {
      id: IDS.botRole,
      name: "Sessions Test Bot",
      description: null,
      permissions: BOT_PERMISSIONS,
      position: 1,
      color: 0,
      colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
      hoist: false,
      managed: true,
      mentionable: false,
      icon: null,
      unicode_emoji: null,
      flags: 0,
      tags: { bot_id: IDS.bot },
    },
  ];
}

/** The guild object as `GET /guilds/:id` and GUILD_CREATE carry it. */
export function guildInfo() {
  return {
    id: IDS.guild,
    name: "Sessions Test Guild",
    icon: null,
    description: null,
    splash: null,
    discovery_splash: null,
    banner: null,
    features: [],
    owner_id: IDS.alice,
    application_id: null,
    region: "deprecated",
    afk_channel_id: null,
    afk_timeout: 300,
    system_channel_id: IDS.general,
    system_channel_flags: 0,
    widget_enabled: false,
    widget_channel_id: null,
    verification_level: 1,
    default_message_notifications: 1,
    mfa_level: 0,
    explicit_content_filter: 2,
    max_presences: null,
    max_members: 25_000_000,
    max_stage_video_channel_users: 50,
    max_video_channel_users: 25,
    vanity_url_code: null,
    premium_tier: 0,
    premium_subscription_count: 0,
    preferred_locale: "en-US",
    rules_channel_id: null,
    safety_alerts_channel_id: null,
    public_updates_channel_id: null,
    hub_type: null,
    premium_progress_bar_enabled: false,
    latest_onboarding_question_id: null,
    nsfw: false,
    nsfw_level: 0,
    incidents_data: null,
    inventory_settings: null,
    embedded_activities: [],
    emojis: [],
    stickers: [],
  };
}

/** The bot's application (`GET /applications/@me`). */
export function application(botUser: DiscordUserData, owner: DiscordUserData): Json {
  return {
    id: IDS.bot,
    name: "Sessions Test Bot",
    icon: null,
    description: "",
    summary: "",
    type: null,
    bot: botUser,
    bot_public: false,
    bot_require_code_grant: false,
    verify_key: "0".repeat(64),
    flags: 8_945_664,
    owner,
    team: null,
    tags: [],
    approximate_guild_count: 1,
    install_params: null,
    redirect_uris: [],
    interactions_endpoint_url: null,
    role_connections_verification_url: null,
    integration_types_config: {},
  };
}
