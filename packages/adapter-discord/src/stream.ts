import type { ChannelStreamV1, DeliveryTarget, SessionsError, StreamingMode } from "@sessions/core";
import { type Client, Routes } from "discord.js";
import { parseDiscordTarget } from "./target.js";

/** What the Discord stream needs: the client (its REST alone), the pace, and how errors read as `SessionsError`s. */
export interface DiscordStreamOptions {
  client: Client;
  intervalMs: number;
  defaultMode: StreamingMode;
  maxMessageLength: number;
  toError(error: unknown): SessionsError;
}

/** A message or channel that is gone: removing it again is done. */
const notFound = (error: unknown) => (error as { status?: number } | undefined)?.status === 404;

/**
 * Streams replies into Discord over REST (so a gateway without the gateway socket streams too): a message posted,
 * edited (`PATCH`) as the reply grows, deleted when not needed. No mention is ever parsed from model output.
 */
export function createDiscordStream(options: DiscordStreamOptions): ChannelStreamV1 {
  const { client, toError } = options;
  const dmChannels = new Map<string, string>();
  const noMentions = { parse: [] };

  /** The channel id messages to `target` go to: a thread's, a channel's, or the DM channel with a user. */
  async function channelOf(target: DeliveryTarget): Promise<string> {
    const { kind, id } = parseDiscordTarget(target.to);
    if (kind === "channel") return target.threadId ?? id;
    let dm = dmChannels.get(id);
    if (dm === undefined) {
      dm = ((await client.rest.post(Routes.userChannels(), { body: { recipient_id: id } })) as { id: string })
        .id;
      dmChannels.set(id, dm);
    }
    return dm;
  }

  const mapped = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw toError(error);
    }
  };

  return {
    defaultMode: options.defaultMode,
    intervalMs: options.intervalMs,
    maxMessageLength: options.maxMessageLength,
    post: (target, text) =>
      mapped(async () => {
        const channelId = await channelOf(target);
        const body = { content: text, allowed_mentions: noMentions };
        return ((await client.rest.post(Routes.channelMessages(channelId), { body })) as { id: string }).id;
      }),
    edit: (target, messageId, text) =>
      mapped(async () => {
        const channelId = await channelOf(target);
        const body = { content: text, allowed_mentions: noMentions };
        await client.rest.patch(Routes.channelMessage(channelId, messageId), { body });
      }),
    remove: (target, messageId) =>
      mapped(async () => {
        const channelId = await channelOf(target);
        await client.rest.delete(Routes.channelMessage(channelId, messageId)).catch((error: unknown) => {
          if (!notFound(error)) throw error;
        });
      }),
  };
}
